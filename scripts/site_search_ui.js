// The search box of the static site (scripts/build_site.py): lunr over the index in search/index.js.
// Every word typed must appear (stemmed as lunr indexes it); the last one may be a prefix.
"use strict";
(function () {
  function snippet(text, words) {
    const low = text.toLowerCase();
    let at = -1;
    for (const w of words) { at = low.indexOf(w.toLowerCase()); if (at >= 0) break; }
    const start = Math.max(0, at - 60);
    return (start > 0 ? "…" : "") + text.slice(start, start + 180) + (text.length > start + 180 ? "…" : "");
  }
  function search(idx, text) {
    const words = lunr.tokenizer(text).map(String).filter(Boolean);
    if (!words.length) return [[], words];
    const run = (prefix) => idx.query((q) => words.forEach((w, i) => {
      const last = prefix && i === words.length - 1;
      q.term(w, { presence: lunr.Query.presence.REQUIRED, usePipeline: !last,
                  wildcard: last ? lunr.Query.wildcard.TRAILING : lunr.Query.wildcard.NONE });
    }));
    let hits = run(false);
    if (!hits.length) hits = run(true);
    return [hits, words];
  }
  function setUp() {
    const box = document.querySelector(".bt-search input");
    const list = document.querySelector(".bt-search .bt-results");
    if (!box || !list || !window.BT_SEARCH || !window.lunr) return;
    if (window.BT_SEARCH.separator) lunr.tokenizer.separator = new RegExp(window.BT_SEARCH.separator);
    const idx = lunr.Index.load(window.BT_SEARCH.index);
    const docs = window.BT_SEARCH.docs;
    const status = document.querySelector(".bt-search .bt-search-status");   // read out by screen readers
    const say = (text) => { if (status) status.textContent = text; };
    box.addEventListener("input", () => {
      list.innerHTML = "";
      say("");
      const [hits, words] = search(idx, box.value);
      list.hidden = !box.value.trim();
      if (!box.value.trim()) return;
      const pages = new Map();                 // hits grouped by page, pages in the order of their best hit
      hits.forEach((h) => {
        const d = docs[h.ref];
        if (!pages.has(d.page)) pages.set(d.page, []);
        pages.get(d.page).push(h.ref);
      });
      const head = document.createElement("li");
      head.className = "bt-count";
      head.textContent = pages.size + (pages.size === 1 ? " page" : " pages") + ", " + hits.length +
        (hits.length === 1 ? " section" : " sections");
      list.appendChild(head);
      say(head.textContent + " found");
      pages.forEach((refs, page) => {
        const li = document.createElement("li");
        li.className = "bt-page";
        li.dataset.page = page;
        const a = document.createElement("a");
        a.href = refs[0];
        a.className = "bt-page-link";
        a.textContent = docs[refs[0]].title;
        li.appendChild(a);
        const sub = document.createElement("ul");
        refs.slice(0, 3).forEach((ref) => {
          const d = docs[ref];
          const item = document.createElement("li");
          const link = document.createElement("a");
          link.href = ref;
          link.textContent = d.section || d.title;
          const p = document.createElement("div");
          p.className = "bt-snippet";
          p.textContent = snippet(d.text, words);
          item.appendChild(link);
          item.appendChild(p);
          sub.appendChild(item);
        });
        li.appendChild(sub);
        list.appendChild(li);
      });
    });
    box.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { const a = list.querySelector("a"); if (a) window.location.href = a.href; }
      if (e.key === "Escape") { box.value = ""; list.innerHTML = ""; list.hidden = true; say(""); }
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setUp); else setUp();
})();
