"""What each environment variable means, in words, for reference/environment.md.

The rest of that page (setting, type, default, the code's own comment) is generated from
service/config.py by gen_reference.py, which stops the build when a variable the settings read
has no note here, or a note names a variable nothing reads. Keep each note to what a deployer
needs; the explanation pages say why.
"""
from __future__ import annotations

NOTES: dict[str, str] = {
    "JOUST_DATA_DIR": "The data dir: the SQLite database `joust.db`, Redis's files, the generated `api_key` and "
                      "`redis_password`. Private: the dir 0700, joust's files in it 0600. Default `./joust-data`.",
    "DATABASE_URL": "A SQLAlchemy URL (`postgresql+psycopg://…`, with the `postgres` extra) to share one database "
                    "between machines; unset: SQLite `joust.db` in the data dir.",
    "REDIS_URL": "The Redis of the queue (`redis://:PASSWORD@host:port/0`). Unset: `joust up` runs an embedded "
                 "redis-server with a password kept in `<data-dir>/redis_password`.",
    "JOUST_API_KEY": "The admin key: every scope, writes recorded as `admin`. Unset: `joust up` generates one "
                     "into `<data-dir>/api_key`. The CLI's remote commands send it too.",
    "JOUST_JUDGE": "The default judge of a tournament. Unset: `anthropic/claude-sonnet-4-5` with an Anthropic key, "
                   "else `openai/$JOUST_OPENAI_MODEL` with `OPENAI_BASE_URL`, else `offline/rubric`. Docker compose "
                   "sets it for the API from whether the deploy's `ANTHROPIC_API_KEY` is set, since only the "
                   "workers get the key.",
    "ANTHROPIC_API_KEY": "The Anthropic judge's key. The workers need it; the API accepts an Anthropic judge when it "
                         "or a live worker holds one. Its presence also makes Claude the default judge.",
    "JOUST_OPENAI_MODEL": "With `OPENAI_BASE_URL`: the model of the default judge, `openai/<model>`, when no "
                          "Anthropic key is set.",
    "OPENAI_BASE_URL": "The OpenAI-compatible server of `openai/...` judges (vLLM, Ollama, llama.cpp: e.g. "
                       "`http://gpu-box:8000/v1`).",
    "JOUST_ELO_K": "K of the online Elo (default 32).",
    "JOUST_QUEUE": "The RQ queue name (default `joust`); deployments sharing one Redis stay apart by it.",
    "JOUST_URL": "The joust server the CLI's remote commands (tournament, submit, board, judges, judgements) "
                 "talk to (default `http://127.0.0.1:8000`).",
    "JOUST_MAX_BODY_BYTES": "The largest request body (default 10485760): 413 above it.",
    "JOUST_MAX_BATCH": "The most submissions or votes in one request (default 10000): 413 above it.",
    "JOUST_MATCH_TIMEOUT": "The scheduler's backstop (s, default 300): a match queued or running this long without "
                           "a live job is handed out again.",
    "JOUST_JOB_RETRIES": "Provider-error retries per match before it is recorded as failed (default 3).",
    "JOUST_RETRY_BACKOFF": "The first backoff (s, default 10) before a match goes back on the queue, doubled each time, "
                           "jittered, never sooner than `retry-after`.",
    "JOUST_JUDGE_CONCURRENCY": "Calls in flight per judge per worker process (default 64).",
    "JOUST_JUDGE_RPM": "Requests per minute per judge across every worker (shared in Redis); 0: off.",
    "JOUST_JUDGE_TPM": "Input+output tokens per minute per judge across every worker; 0: off.",
    "JOUST_WORKER_MATCHES": "Matches one worker process holds at once; 0 (default): the judge concurrency.",
    "JOUST_LEASE_TTL": "Seconds after a worker's last heartbeat that its matches are handed out again (default 15).",
    "JOUST_STOP_AFTER_FAILURES": "A run stops itself (`failing`) after this many failed matches in a row with no "
                                 "judgement between (default 10; 0: never).",
    "JOUST_BREAKER_FAILURES": "A judge's circuit breaker opens after this many failed calls in a row across workers "
                              "(default 10; 0: never).",
    "JOUST_BREAKER_OPEN": "Seconds the breaker stays open before one probe (default 5), doubled per failed probe, at "
                          "most 60.",
    "JOUST_BREAKER_PROBES": "Failed probes in a row after which the judge is down and its calls fail unsent "
                            "(default 3; 0: never).",
    "JOUST_OVERLOAD_PAUSE_AFTER": "A 429/529 without `retry-after` pauses every worker only when it ends this many "
                                  "failed calls in a row (default 3; 0: never).",
    "JOUST_OVERLOAD_PAUSE": "That pause (s, default 1), doubled per further failure in a row, at most 60.",
    "JOUST_CALL_BACKOFF": "The first wait (s, default 1) before a failed call is sent again on its own, doubled per "
                          "send, jittered.",
    "JOUST_DRAIN_TIMEOUT": "On SIGTERM, seconds a worker waits for its matches in flight before giving them back "
                           "(default 10).",
    "JOUST_BATCH_POLL": "Batch delivery: seconds between the batch driver's cycles (default 30).",
    "JOUST_BATCH_MAX_REQUESTS": "Batch delivery: requests per batch (default 100000).",
    "ANTHROPIC_BASE_URL": "The Anthropic endpoint (a proxy, or a fake in tests); the SDK sends the key there.",
    "OPENAI_API_KEY": "The key of `openai/...` judges, when their server needs one (OpenAI itself does).",
    "JOUST_JUDGE_ENDPOINTS": "JSON, per judge spec: its own `base_url` and `api_key` or `api_key_env`, and `rpm`, "
                             "`tpm`, `concurrency`, e.g. `{\"openai/llama3\": {\"base_url\": \"http://gpu-box:8000/v1\", "
                             "\"api_key_env\": \"LLAMA_KEY\"}}`.",
    "JOUST_JUDGE_TIMEOUT": "Per-call timeout (s, default 120).",
    "JOUST_JUDGE_MAX_TOKENS": "`max_tokens` of each judge call (default 512); also what a budget reserves per reply.",
    "JOUST_SCHEDULER_INTERVAL": "Seconds between scheduler ticks (default 5).",
    "JOUST_PRICES": "A JSON file of judge prices in USD per million input/output tokens, over the built-in table, "
                    "e.g. `{\"openai/llama3\": {\"input\": 0, \"output\": 0}}`.",
    "JOUST_LOG_FORMAT": "`text` (default) or `json`: one JSON object per line (`time`, `level`, `logger`, `message`, "
                        "`exc_info`), with `request_id` (API) or `match_id` and `tournament_id` (workers).",
    "JOUST_PRIVATE": "`1`: every request except `GET /api/health` needs a key (any scope; a read-only key with no "
                     "scopes included), `/metrics` and this manual too. `/vote` asks for its own voter key, and the "
                     "pages' static files stay public. A key whose only scope is `vote` reads nothing (403).",
}
