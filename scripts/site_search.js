// Build the site's search index with lunr's own index builder (npm package lunr), at site build time.
//   node scripts/site_search.js LUNR_DIR DOCS.json OUT.js
// DOCS.json: [{id, page, title, section, text}], one per section of a page (scripts/build_site.py).
// OUT.js: `window.BT_SEARCH = {index, docs}`, loaded by a <script> tag, so search works from file://
// (no fetch, no server) and offline.
"use strict";
const fs = require("fs");
const path = require("path");
const [lunrDir, docsFile, outFile] = process.argv.slice(2);
if (!lunrDir || !docsFile || !outFile) {
  console.error("usage: node scripts/site_search.js LUNR_DIR DOCS.json OUT.js");
  process.exit(2);
}
const lunr = require(path.resolve(lunrDir));
// Words are split at code punctuation too, not only at spaces and hyphens (lunr's default), so
// `loss.backward(retain_graph=True)` is found by `retain_graph`; `_` stays inside a word. The UI
// splits a query the same way (it reads this separator from the index file).
const SEPARATOR = /[\s\-()[\]{}=.,;:`'"<>\/\\*+!?#|&%^~@$]+/;
lunr.tokenizer.separator = SEPARATOR;
const docs = JSON.parse(fs.readFileSync(docsFile, "utf8"));
const index = lunr(function () {
  this.ref("id");
  this.field("title", { boost: 5 });
  this.field("section", { boost: 3 });
  this.field("text");
  docs.forEach((d) => this.add(d));
});
const shown = {};
docs.forEach((d) => { shown[d.id] = { page: d.page, title: d.title, section: d.section, text: d.text.slice(0, 600) }; });
fs.writeFileSync(outFile, "window.BT_SEARCH = " + JSON.stringify({ index: index, docs: shown, separator: SEPARATOR.source }) + ";\n");
console.log(`search: ${docs.length} sections indexed`);
