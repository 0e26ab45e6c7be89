package figure

// PageCSS is the style of polebench's HTML pages (the report, the nightly's history):
// sans-serif text, an overview of cards, tables with numbers aligned, figures at their
// size with their captions, links over the points of a figure (a.spot).
const PageCSS = `:root{--ink:#1f2328;--muted:#59636e;--line:#d1d9e0;--good:#1a7f37;--bad:#cf222e;--tie:#9a6700;--bg:#f6f8fa}
body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;max-width:1240px;margin:1.5em auto;padding:0 1.2em;color:var(--ink);line-height:1.45}
h1{font-size:1.75em;margin:.2em 0}h2{margin-top:2.2em;border-bottom:1px solid var(--line);padding-bottom:.2em}h3{font-size:1.05em;margin:1.4em 0 .4em}
.meta{color:var(--muted);margin:0 0 1em}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(210px,1fr));gap:.7em;margin:1em 0}
.card{border:1px solid var(--line);border-radius:8px;padding:.6em .9em;background:var(--bg)}
.card .big{display:block;font-size:1.45em;font-weight:bold}.card .small{color:var(--muted);font-size:.88em}
nav ol{columns:2;margin:.3em 0;padding-left:1.4em}nav li{margin:.15em 0}
table{border-collapse:collapse;width:100%;font-size:.9em;margin:.6em 0}
td,th{border-bottom:1px solid var(--line);padding:5px 7px;text-align:left;vertical-align:top}
th{background:var(--bg)}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.good{color:var(--good)}.bad{color:var(--bad);font-weight:bold}.tie{color:var(--tie)}.muted{color:var(--muted)}
tr.split td:first-child{border-left:3px solid var(--tie)}
.claim,.verdict{margin:.4em 0;padding:.45em .8em;border-left:4px solid var(--line);background:var(--bg)}
.verdict.good{border-color:var(--good)}.verdict.bad{border-color:var(--bad)}
figure{margin:1em 0}figcaption{font-size:.88em;color:#3d444d;max-width:880px}figcaption b{color:var(--ink)}
.plot{position:relative;display:inline-block;max-width:100%;line-height:0}
.plot img{display:block;width:864px;max-width:100%;height:auto;border:1px solid #eee}
a.spot{position:absolute;width:18px;height:18px;margin:-9px 0 0 -9px;border-radius:50%}
a.spot:hover,a.spot:focus{outline:2px solid #000;background:rgba(255,220,0,.35)}
.evidence{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:1em;align-items:start}
.evidence .plot img{width:100%}
details{margin:.7em 0}summary{cursor:pointer;color:#0969da}
code{font-size:.92em}
`

// MarkImagesJS marks, once the page has loaded, every image as loaded or not
// (data-loaded "1" or "0") and counts them on the body (data-images-ok,
// data-images-broken): what a headless browser test reads of the page a reader sees.
const MarkImagesJS = `function markImages() {
  var ok = 0, broken = 0;
  document.querySelectorAll("img").forEach(function (i) {
    var good = i.complete && i.naturalWidth > 0;
    i.setAttribute("data-loaded", good ? "1" : "0");
    if (good) ok++; else broken++;
  });
  document.body.setAttribute("data-images-ok", ok);
  document.body.setAttribute("data-images-broken", broken);
}`
