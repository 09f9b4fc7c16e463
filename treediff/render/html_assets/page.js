/* treediff HTML page: the side-by-side aligned trees, built lazily from the embedded rows.
 *
 * Each tree section (class "tree", id "tN") has its rows in the JSON script element "tN-data"
 * (column-oriented: see treediff.render.html.tree_data).  Only the rows of expanded subtrees become
 * table rows; expanding builds the children's rows, collapsing removes them.  Log-derived text is
 * only ever set with textContent.  Links "#tN-rI" (the divergences) expand the row's ancestors and
 * scroll to it.
 */
(function () {
  "use strict";
  var numbers = new Intl.NumberFormat("en-US");
  var trees = {};
  var target = null;
  /* "expand divergent" stops after about this many rows (a page stays quick to scroll). */
  var EXPAND_BUDGET = 2000;

  function text(tag, value, cls) {
    var el = document.createElement(tag);
    if (cls) { el.className = cls; }
    if (value !== null && value !== undefined) { el.textContent = String(value); }
    return el;
  }

  function Tree(section) {
    var d = JSON.parse(document.getElementById(section.id + "-data").textContent);
    var n = d.n, i, p;
    this.el = section;
    this.key = section.getAttribute("data-tree");
    this.d = d;
    this.n = n;
    this.body = section.querySelector("table.tree tbody");
    this.notation = "own";
    this.onlyDiv = false;
    // Children lists in tree order (the rows are depth-first), the top rows under the virtual row n.
    var start = new Int32Array(n + 2);
    for (i = 0; i < n; i++) { p = d.parent[i]; start[(p < 0 ? n : p) + 1] += 1; }
    for (i = 1; i < n + 2; i++) { start[i] += start[i - 1]; }
    var fill = start.slice(0, n + 1), kids = new Int32Array(n), level = new Int32Array(n);
    for (i = 0; i < n; i++) {
      p = d.parent[i];
      kids[fill[p < 0 ? n : p]++] = i;
      level[i] = p < 0 ? 0 : level[p] + 1;
    }
    this.start = start;
    this.kids = kids;
    this.level = level;
    this.expanded = new Uint8Array(n + 1);
    this.expanded[n] = 1;
    this.openRoots();
    this.bind();
    this.render();
  }

  Tree.prototype.openRoots = function () {
    var tops = this.children(this.n);
    for (var k = 0; k < tops.length; k++) {
      if (tops.length === 1 || this.d.uci[tops[k]] === "") { this.expanded[tops[k]] = 1; }
    }
  };

  /* The children of row i that the current filter shows. */
  Tree.prototype.children = function (i) {
    var out = [], d = this.d;
    for (var k = this.start[i]; k < this.start[i + 1]; k++) {
      var j = this.kids[k];
      if (!this.onlyDiv || d.div[j]) { out.push(j); }
    }
    return out;
  };

  Tree.prototype.hasChildren = function (i) {
    for (var k = this.start[i]; k < this.start[i + 1]; k++) {
      if (!this.onlyDiv || this.d.div[this.kids[k]]) { return true; }
    }
    return false;
  };

  Tree.prototype.move = function (side, i) {
    var own = this.d[side + "_own"], uci = this.d.uci[i];
    var name = (this.notation === "own" && own && own[i] !== null) ? own[i] : uci;
    if (name === "") { name = "(root)"; }
    if (this.d.visit && this.d.visit[i]) { name += " [" + this.d.visit[i] + "]"; }
    return name;
  };

  Tree.prototype.fullPath = function (i) {
    var parts = [];
    for (var j = i; j >= 0; j = this.d.parent[j]) { if (this.d.uci[j] !== "") { parts.unshift(this.d.uci[j]); } }
    return parts.length ? parts.join("/") : "(root)";
  };

  Tree.prototype.sideCells = function (tr, side, i, gap) {
    var d = this.d;
    if (gap) {
      for (var g = 0; g < 6; g++) { tr.appendChild(text("td", null, "gap")); }
      return;
    }
    var cell = text("td", null, "mv");
    cell.style.paddingLeft = (0.3 + 1.2 * this.level[i]) + "em";
    if (this.hasChildren(i)) {
      var button = text("button", this.expanded[i] ? "\u25be" : "\u25b8", "tg");
      button.type = "button";
      button.setAttribute("aria-label", "expand or collapse");
      button.setAttribute("aria-expanded", this.expanded[i] ? "true" : "false");
      cell.appendChild(button);
    } else {
      cell.appendChild(text("span", "\u00b7", "leaf"));
    }
    cell.appendChild(text("span", this.move(side, i), "name"));
    cell.title = this.fullPath(i);
    tr.appendChild(cell);
    var acts = text("td", d[side + "_acts"][i], "acts");
    if (d[side + "_kind"][i]) { acts.title = "kind: " + d[side + "_kind"][i]; }
    tr.appendChild(acts);
    tr.appendChild(text("td", d[side + "_depth"][i], "depth"));
    tr.appendChild(text("td", d[side + "_red"][i], "num"));
    var nodes = d[side + "_nodes"][i];
    tr.appendChild(text("td", nodes === null ? "" : numbers.format(nodes), "num"));
    tr.appendChild(text("td", d[side + "_line"][i], "num line"));
  };

  Tree.prototype.row = function (i) {
    var d = this.d, status = d.statuses[d.status[i]];
    var tr = document.createElement("tr");
    tr.id = "t" + this.key + "-r" + i;
    tr.className = "st-" + status;
    tr.setAttribute("data-i", String(i));
    tr.setAttribute("data-l", String(this.level[i]));
    this.sideCells(tr, "a", i, status === "only-B");
    tr.appendChild(text("td", d.markers[d.status[i]], "mk"));
    var delta = (d.a_nodes[i] || 0) - (d.b_nodes[i] || 0);
    tr.appendChild(text("td", delta > 0 ? "+" + numbers.format(delta) : numbers.format(delta), "num delta"));
    this.sideCells(tr, "b", i, status === "only-A");
    return tr;
  };

  Tree.prototype.emit = function (i, into) {
    into.appendChild(this.row(i));
    if (this.expanded[i]) { this.emitChildren(i, into); }
  };

  Tree.prototype.emitChildren = function (i, into) {
    var kids = this.children(i);
    for (var k = 0; k < kids.length; k++) { this.emit(kids[k], into); }
  };

  Tree.prototype.render = function () {
    var frag = document.createDocumentFragment();
    this.emitChildren(this.n, frag);
    if (!frag.firstChild) {
      var none = text("td", this.n ? "(no divergent row)" : "(no row selected)", "empty");
      none.colSpan = 14;
      frag.appendChild(document.createElement("tr")).appendChild(none);
    }
    this.body.textContent = "";
    this.body.appendChild(frag);
  };

  Tree.prototype.rowElement = function (i) {
    return document.getElementById("t" + this.key + "-r" + i);
  };

  Tree.prototype.toggle = function (i) {
    var tr = this.rowElement(i);
    if (!tr || !this.hasChildren(i)) { return; }
    var level = this.level[i];
    if (this.expanded[i]) {
      this.expanded[i] = 0;
      while (tr.nextSibling && +tr.nextSibling.getAttribute("data-l") > level) { tr.nextSibling.remove(); }
    } else {
      this.expanded[i] = 1;
      var frag = document.createDocumentFragment();
      this.emitChildren(i, frag);
      tr.parentNode.insertBefore(frag, tr.nextSibling);
    }
    var buttons = tr.querySelectorAll("button.tg");
    for (var b = 0; b < buttons.length; b++) {
      buttons[b].textContent = this.expanded[i] ? "\u25be" : "\u25b8";
      buttons[b].setAttribute("aria-expanded", this.expanded[i] ? "true" : "false");
    }
  };

  /* Expand the divergent rows (a row is divergent when it or a row below it is not "same"), the
   * shallowest first (tree order), until about `budget` rows are shown. */
  Tree.prototype.expandDivergent = function (budget) {
    var d = this.d, shown = this.children(this.n).length;
    for (var i = 0; i < this.n && shown < budget; i++) {
      var p = d.parent[i];
      if (d.div[i] && !this.expanded[i] && (p < 0 || this.expanded[p]) && this.visible(i)) {
        this.expanded[i] = 1;
        shown += this.start[i + 1] - this.start[i];
      }
    }
  };

  /* Whether every ancestor of row i is expanded. */
  Tree.prototype.visible = function (i) {
    for (var p = this.d.parent[i]; p >= 0; p = this.d.parent[p]) { if (!this.expanded[p]) { return false; } }
    return true;
  };

  /* Expand every ancestor of row i, show it and mark it as the target. */
  Tree.prototype.reveal = function (i) {
    if (!(i >= 0 && i < this.n)) { return; }
    for (var p = this.d.parent[i]; p >= 0; p = this.d.parent[p]) { this.expanded[p] = 1; }
    if (this.onlyDiv && !this.d.div[i]) {
      this.onlyDiv = false;
      this.el.querySelector("input.only-div").checked = false;
    }
    this.render();
    var tr = this.rowElement(i);
    if (target) { target.classList.remove("target"); }
    target = tr;
    tr.classList.add("target");
    tr.scrollIntoView({block: "center"});
  };

  /* The row of a typed path ("/"-joined moves, UCI or either side's own notation; "" the root), or -1. */
  Tree.prototype.find = function (typed) {
    if (!this.paths) {
      // Every row's full path in UCI and in each side's notation, built on the first search (O(rows)).
      var d = this.d, sets = [[d.uci, null], [d.uci, d.a_own], [d.uci, d.b_own]];
      this.paths = new Map();
      for (var s = 0; s < sets.length; s++) {
        if (s && !sets[s][1]) { continue; }
        var names = new Array(this.n);
        for (var i = 0; i < this.n; i++) {
          var own = sets[s][1], move = own && own[i] !== null ? own[i] : d.uci[i], p = d.parent[i];
          names[i] = p < 0 || names[p] === "" ? move : names[p] + "/" + move;
          if (!this.paths.has(names[i])) { this.paths.set(names[i], i); }
        }
      }
    }
    var key = typed.trim().replace(/^\/+|\/+$/g, "");
    var hit = this.paths.get(key);
    if (hit === undefined) { hit = this.paths.get(key.toLowerCase()); }
    return hit === undefined ? -1 : hit;
  };

  Tree.prototype.bind = function () {
    var self = this;
    var jump = this.el.querySelector("form.jump");
    jump.addEventListener("submit", function (event) {
      event.preventDefault();
      var typed = jump.querySelector("input").value, out = jump.querySelector("output");
      var i = self.find(typed);
      out.textContent = i < 0 ? "no row " + typed.trim() : "";
      if (i >= 0) { self.reveal(i); }
    });
    this.body.addEventListener("click", function (event) {
      var hit = event.target.closest("button.tg, span.name");
      if (!hit) { return; }
      var tr = hit.closest("tr");
      self.toggle(+tr.getAttribute("data-i"));
    });
    var radios = this.el.querySelectorAll("input[type=radio]");
    for (var r = 0; r < radios.length; r++) {
      radios[r].addEventListener("change", function (event) {
        self.notation = event.target.value;
        self.render();
      });
    }
    this.el.querySelector("input.only-div").addEventListener("change", function (event) {
      self.onlyDiv = event.target.checked;
      self.render();
    });
    this.el.querySelector("button.expand-div").addEventListener("click", function () {
      self.expandDivergent(EXPAND_BUDGET);
      self.render();
    });
    this.el.querySelector("button.collapse-all").addEventListener("click", function () {
      self.expanded.fill(0);
      self.expanded[self.n] = 1;
      self.openRoots();
      self.render();
    });
  };

  function follow(hash) {
    var m = /^#t(\d+)-r(\d+)$/.exec(hash || "");
    if (!m || !trees[m[1]]) { return false; }
    trees[m[1]].reveal(+m[2]);
    return true;
  }

  /* The table of contents: one link per section heading. */
  function contents() {
    var nav = document.getElementById("toc");
    if (!nav) { return; }
    var heads = document.querySelectorAll("main > section[id] > h2");
    for (var h = 0; h < heads.length; h++) {
      var link = text("a", heads[h].textContent, "toc");
      link.href = "#" + heads[h].parentNode.id;
      nav.appendChild(link);
    }
  }

  function start() {
    contents();
    var sections = document.querySelectorAll("section.tree");
    for (var s = 0; s < sections.length; s++) {
      try {
        var tree = new Tree(sections[s]);
        trees[tree.key] = tree;
      } catch (err) {
        console.error("treediff: tree " + sections[s].id + " could not be built: " + err);
      }
    }
    document.addEventListener("click", function (event) {
      var link = event.target.closest("a.divlink");
      if (!link) { return; }
      var hash = link.getAttribute("href");
      if (follow(hash)) {
        event.preventDefault();
        history.replaceState(null, "", hash);
      }
    });
    window.addEventListener("hashchange", function () { follow(location.hash); });
    follow(location.hash);
    window.treediffTrees = trees;
    window.treediffRendered = performance.now();
    document.documentElement.setAttribute("data-rendered", "1");
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
