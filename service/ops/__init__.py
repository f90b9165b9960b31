"""Running joust: the processes of `joust up` and what keeps them alive (`processes`, `orphans`,
`liveness`, `process_signals`), its data dir (`data_dir`), the embedded Redis (`redis_server`),
the nightly scheduler (`scheduler`, `cron`), metrics, logs and the API process's garbage
collector (`metrics`, `logs`, `child_logs`, `heap`)."""
