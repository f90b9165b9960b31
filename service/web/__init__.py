"""The web layer: the FastAPI application (`app`), its API routes and their schemas (`routes`,
`api_models`, `api_responses`, `api_views`), authentication (`auth`), and the pages with their
templates, static files and charts (`pages`, `templates`, `static`, `charts`). It calls the use
cases and the store below it, never the workers."""
