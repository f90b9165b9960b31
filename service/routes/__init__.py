"""The HTTP routes, one module per noun; `service.app.create_app` includes their routers."""
