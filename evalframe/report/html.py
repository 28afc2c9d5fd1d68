"""The HTML both pages share: the page shell, its inline CSS and script, small helpers.

A page is one self-contained file: inline CSS, inline SVG plots and a small
inline script, nothing loaded from anywhere (no CDN script, font or image), so
it opens offline, prints, and shows inside MLflow's artifact view (an iframe
that allows scripts). Everything is readable without the script too: it only
adds sorting, filtering and expanding rows (without it, every row's details
are shown; past ``querytable.LAZY_OVER`` queries the details are data the
script builds on expand, and a note says so).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from evalframe import __version__
from evalframe.assess.runfolder import FAIL, NEGATIVE, PASS, UNSCORED, WARN
from evalframe.report.plotdata import number
from evalframe.report.plots import VERDICT_MARKS

if TYPE_CHECKING:
    from evalframe.report.drift import DeltaRow

__all__ = [
    "CSS",
    "SCRIPT",
    "STATUS_CLASS",
    "STATUS_WORD",
    "VERDICT_CLASS",
    "esc",
    "figure",
    "fmt",
    "interval",
    "mark",
    "page",
    "table",
    "verdict_mark",
]


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def fmt(value: Any, digits: int = 3, signed: bool = False) -> str:
    """A number for a table cell; missing or NaN as an en dash."""
    x = number(value)
    if math.isnan(x):
        return "–"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def table(
    head: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "", raw: bool = False
) -> str:
    """A plain table; cells are escaped unless ``raw`` (already HTML)."""
    cell = (lambda c: c) if raw else esc
    out = [f'<table class="{cls}">' if cls else "<table>", "<thead><tr>"]
    out += [f"<th>{esc(h)}</th>" for h in head]
    out.append("</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


#: Status and verdict colours come from the Okabe-Ito palette; each is always
#: paired with a mark (✓ ⚠ ✗ –, ▲ ▼ ●), never shown by colour alone.
CSS = """
:root{--ok:#0072B2;--warn:#9a6a00;--bad:#D55E00;--muted:#666;--line:#d8d8d8;--bg2:#f5f6f8}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
 max-width:78em;padding:1.2em 1.6em;color:#1a1a1a}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.6em 0 .5em;border-bottom:1px solid
 var(--line);padding-bottom:.2em}h3{font-size:1.02em;margin:1.1em 0 .4em}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.muted{color:var(--muted)}.desc{margin:.1em 0 .6em;color:#333}
nav{margin:.4em 0 0;font-size:.95em}nav a{margin-right:1em}
.verdict{display:inline-block;font-weight:600;padding:.35em .8em;border-radius:4px;margin:.4em 0;
 border:2px solid}
.verdict.pass{color:var(--ok);border-color:var(--ok)}.verdict.none{color:var(--muted)}.verdict.fail{color:var(--bad);
 border-color:var(--bad)}
table.changes td:nth-child(-n+3){white-space:nowrap}
ul.failing{margin:.1em 0 .2em;padding-left:1.4em}
.verdict-warnings{margin:.3em 0 0;padding-left:1.2em;font-weight:400;color:#8a5300;max-width:70em}
dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;margin:.6em 0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:.5em 0}
th,td{border-bottom:1px solid var(--line);padding:.28em .6em;text-align:left;vertical-align:top}
th{background:var(--bg2);font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
ul.gates{list-style:none;padding:0}ul.gates li{margin:.25em 0}
.s-pass,.v-improved{color:var(--ok)}.s-warn{color:var(--warn)}.s-fail,.v-regressed{color:var(--bad)}
.s-neg,.v-noise{color:var(--muted)}
.mark{font-weight:700;display:inline-block;min-width:1.1em}
.plots{display:flex;flex-wrap:wrap;gap:1em 2em}
figure{margin:.4em 0;break-inside:avoid}figure.wide{flex:1 1 100%}
figure svg{max-width:100%;height:auto}figcaption{font-size:.88em;color:#333;max-width:46em}
.controls{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:center;margin:.5em 0;
 padding:.5em;background:var(--bg2);border-radius:4px}
.controls label{font-size:.92em}
#q-table{width:100%}.q-scroll{overflow-x:auto}
#q-table th button{all:unset;cursor:pointer;white-space:nowrap}
#q-table th button::after{content:" ↕";color:#aaa}
#q-table th[aria-sort=ascending] button::after{content:" ↑";color:#000}
#q-table th[aria-sort=descending] button::after{content:" ↓";color:#000}
button.toggle{font:inherit;border:1px solid var(--line);background:#fff;border-radius:3px;
 width:1.8em;cursor:pointer}
tr.detail>td{background:#fbfbfc;padding:.6em 1em 1em}
.q-text{max-width:24em}#q-table>tbody>tr.row>td,#q-table th{padding:.28em .45em}
table.ranked td,table.ranked th{padding:.18em .5em;font-size:.93em}
tr.hit td{background:#e6f0f8}tr.hit td:first-child{box-shadow:inset 4px 0 var(--ok)}
.chunk{max-width:44em;color:#333;font-size:.92em}details.chunk{white-space:pre-wrap}
details.chunk summary{white-space:normal;cursor:pointer}
.tag{font-size:.8em;border:1px solid;border-radius:3px;padding:0 .3em;margin-left:.3em;
 white-space:nowrap}
.tag.entered{color:var(--ok)}.tag.left{color:var(--bad)}.tag.changed,.tag.added,.tag.removed{
 color:#6a3d9a}
.side{display:flex;flex-wrap:wrap;gap:1em 2.5em}.side>div{flex:1 1 22em}
.drift-q{border-top:1px solid var(--line);padding:.4em 0 .8em}
del{background:#fde0d2;text-decoration:line-through}ins{background:#d7e9f7;text-decoration:none;
 border-bottom:2px solid var(--ok)}
.diff{white-space:pre-wrap;padding:.4em;background:#fbfbfc;border:1px solid var(--line)}
pre.analyses{overflow-x:auto;padding:.6em;background:#fbfbfc;border:1px solid var(--line);
 font-size:.85em;line-height:1.35}
.note{background:#fff8e1;border-left:4px solid #e6a700;padding:.4em .8em;margin:.6em 0}
.run-notes ul{margin:.3em 0 0;padding-left:1.4em}
footer{margin-top:3em;color:var(--muted);font-size:.85em}
@media print{
 body{max-width:none;padding:0;font-size:11px}nav,.controls,button.toggle{display:none}
 a{color:inherit;text-decoration:none}
 h2{break-after:avoid}tr{break-inside:avoid}
}
"""

#: Sorting, filtering and expanding rows of the per-query table (``#q-table``):
#: each query is a ``<tbody class="q">`` holding its row and its detail row; a detail
#: row marked ``data-lazy="i"`` is filled from the ``#q-details`` JSON block when it is
#: first expanded (large runs, ``querytable.LAZY_OVER``).
SCRIPT = """
(function(){
"use strict";
var table=document.getElementById("q-table");
if(!table){return;}
var bodies=function(){return Array.prototype.slice.call(table.tBodies);};
bodies().forEach(function(tb){var d=tb.querySelector("tr.detail");if(d){d.hidden=true;}});
var lazy=null;
function fill(d){
 var i=d.getAttribute("data-lazy");if(i===null){return;}
 if(lazy===null){var s=document.getElementById("q-details");lazy=s?JSON.parse(s.textContent):[];}
 d.cells[0].innerHTML=lazy[+i]||"";d.removeAttribute("data-lazy");
}
function setOpen(tb,open){
 var b=tb.querySelector("button.toggle"),d=tb.querySelector("tr.detail");
 if(!b||!d){return;}
 if(open){fill(d);}
 b.setAttribute("aria-expanded",open?"true":"false");b.textContent=open?"\\u25BE":"\\u25B8";
 d.hidden=!open;
}
table.addEventListener("click",function(e){
 var b=e.target.closest("button.toggle");if(!b){return;}
 var tb=b.closest("tbody");setOpen(tb,b.getAttribute("aria-expanded")!=="true");
});
document.querySelectorAll("[data-expand]").forEach(function(b){
 b.addEventListener("click",function(){var open=b.getAttribute("data-expand")==="all";
  bodies().forEach(function(tb){if(!tb.hidden){setOpen(tb,open);}});});
});
table.tHead.addEventListener("click",function(e){
 var th=e.target.closest("th[data-col]");if(!th){return;}
 var col=+th.getAttribute("data-col"),num=th.getAttribute("data-type")==="num";
 var dir=th.getAttribute("aria-sort")==="ascending"?-1:1;
 table.tHead.querySelectorAll("th[aria-sort]").forEach(function(o){o.removeAttribute("aria-sort");});
 th.setAttribute("aria-sort",dir>0?"ascending":"descending");
 var key=function(tb){var c=tb.rows[0].cells[col];
  var v=c.hasAttribute("data-v")?c.getAttribute("data-v"):c.textContent.trim();
  return num?parseFloat(v):v.toLowerCase();};
 var rows=bodies().map(function(tb,i){return [key(tb),i,tb];});
 rows.sort(function(a,b){
  var x=a[0],y=b[0];
  if(num){var nx=isNaN(x),ny=isNaN(y);if(nx||ny){return nx===ny?a[1]-b[1]:(nx?1:-1);}}
  return x<y?-dir:(x>y?dir:a[1]-b[1]);});
 rows.forEach(function(r){table.appendChild(r[2]);});
});
var controls=Array.prototype.slice.call(document.querySelectorAll("[data-filter]"));
var count=document.getElementById("q-count");
function apply(){
 var shown=0,all=bodies();
 all.forEach(function(tb){
  var ok=controls.every(function(c){
   var v=c.value,k=c.getAttribute("data-filter");if(!v){return true;}
   if(k==="text"){return tb.getAttribute("data-text").indexOf(v.toLowerCase())>=0;}
   return tb.getAttribute("data-"+k)===v;});
  tb.hidden=!ok;if(ok){shown++;}});
 if(count){count.textContent=shown+" of "+all.length+" queries shown";}
}
controls.forEach(function(c){c.addEventListener("input",apply);c.addEventListener("change",apply);});
apply();
})();
"""


STATUS_CLASS = {
    PASS: "s-pass",
    WARN: "s-warn",
    FAIL: "s-fail",
    NEGATIVE: "s-neg",
    UNSCORED: "s-neg",
}
STATUS_WORD = {
    PASS: "pass",
    WARN: "in between",
    FAIL: "fail",
    NEGATIVE: "negative example",
    UNSCORED: "not scored",
}
VERDICT_CLASS = {"improved": "v-improved", "regressed": "v-regressed", "within noise": "v-noise"}


def mark(status: str) -> str:
    return (
        f'<span class="mark {STATUS_CLASS.get(status, "")}" '
        f'title="{esc(STATUS_WORD.get(status, status))}">{esc(status)}</span>'
    )


def interval(row: DeltaRow) -> str:
    """The corrected interval and its level, as ``evalframe compare`` prints it."""
    if math.isnan(row.low) or math.isnan(row.level):
        return "–"
    level = f"{100 * row.level:.4g}%"
    return f"[{fmt(row.low, signed=True)}, {fmt(row.high, signed=True)}] at {level}"


def verdict_mark(verdict: str, words: bool = True) -> str:
    """▲ improved, ▼ regressed, ● within noise (the shape alone, titled, when ``words`` is off)."""
    symbol = VERDICT_MARKS.get(verdict, VERDICT_MARKS["within noise"])[2]
    text = f"{symbol} {esc(verdict)}" if words else symbol
    return f'<span class="{VERDICT_CLASS.get(verdict, "")}" title="{esc(verdict)}">{text}</span>'


def figure(svg: str, caption: str, wide: bool = False, ident: str = "") -> str:
    attrs = f' id="{esc(ident)}"' if ident else ""
    cls = ' class="wide"' if wide else ""
    return f"<figure{cls}{attrs}>{svg}<figcaption>{caption}</figcaption></figure>"


def page(title: str, body: str) -> str:
    """The whole document around ``body``."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"{body}<footer>Written by evalframe {esc(__version__)}. One self-contained file: "
        "it loads nothing from the network.</footer>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
