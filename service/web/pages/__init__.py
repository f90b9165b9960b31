"""The web pages' rendering: Jinja2 templates with autoescaping, shared filters, and the
conditional-request rule every page follows (see `service.web.pages.render`)."""
