"""The edges of joust that people and machines touch: settings, store, HTTP API, page,
scheduler, CLI and the embedded Redis."""
