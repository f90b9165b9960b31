"""The edges of joust that people and machines touch, one package per layer; a layer imports only
the layers below it (import-linter's contracts in pyproject.toml, checked by tests/test_lint.py):

- `cli`: the `joust` command, the composition root (starts the API, workers, scheduler);
- `web`: the HTTP API, the pages, their templates and charts;
- `ops`: processes, the embedded Redis, the scheduler, metrics and logs;
- `usecases`: tournaments, boards, votes, imports and exports, without HTTP;
- `store`: the database and the job queue's contract;
- `config`, `credentials`: the settings.

The workers (`workers/`) sit beside `web`: they import `ops`, the store and the settings."""
