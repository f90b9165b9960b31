"""The HTTP routes, one module per noun; `service.web.app.create_app` includes their routers."""
