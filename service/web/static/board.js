// The board page's enhancements (service/web/templates/board.html): the selector form shows the new
// board as soon as a choice changes, and the board's columns sort on a click (within each
// group of the comparison graph: ranks compare only there). Without JavaScript the form has
// its Show button and the board its rank order.
(function () {
  "use strict";
  var form = document.querySelector("form.choose");
  if (form) {
    form.querySelectorAll("select").forEach(function (s) {
      s.addEventListener("change", function () { form.submit(); });
    });
  }
  var state = {};  // column index -> direction, kept across live updates

  function value(cell, numeric) {
    var raw = cell.hasAttribute("data-value") ? cell.getAttribute("data-value") : cell.textContent.trim();
    if (!numeric) { return raw.toLowerCase(); }
    var n = parseFloat(raw);
    return isNaN(n) ? -Infinity : n;
  }

  function sortTable(table, column, direction) {
    var th = table.tHead.rows[0].cells[column];
    var numeric = th.getAttribute("data-sort") === "num";
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", direction);
    Array.prototype.forEach.call(table.tBodies, function (body) {
      var rows = Array.prototype.filter.call(body.rows, function (r) { return !r.classList.contains("component"); });
      rows.sort(function (a, b) {
        var x = value(a.cells[column], numeric), y = value(b.cells[column], numeric);
        var order = x < y ? -1 : x > y ? 1 : 0;
        return direction === "ascending" ? order : -order;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  }

  function enhance() {
    document.querySelectorAll("table.sortable").forEach(function (table) {
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, column) {
        if (!th.hasAttribute("data-sort") || th.querySelector("button.sort")) { return; }
        var button = document.createElement("button");
        button.className = "sort";
        button.type = "button";
        while (th.firstChild) { button.appendChild(th.firstChild); }
        th.appendChild(button);
        button.addEventListener("click", function () {
          var direction = th.getAttribute("aria-sort") === "descending" ? "ascending" : "descending";
          state = { column: column, direction: direction };
          sortTable(table, column, direction);
        });
      });
      if (state.column !== undefined) { sortTable(table, state.column, state.direction); }
    });
  }

  enhance();
  document.addEventListener("live:updated", enhance);
})();
