// Starts Swagger UI on /docs (service/web/routes/docs.py). A file rather than an inline script, so
// the Content-Security-Policy allows scripts from the app itself only. No validator badge: it
// would send the API description to a third party.
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
