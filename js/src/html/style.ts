/**
 * The page's one stylesheet, inlined so that the page is a single file that opens anywhere, with
 * no network. Colours follow the verdict: red for the fault and deaths, amber for the writes that
 * break the invariant.
 */

export const STYLE = `
:root{--red:#d1242f;--red-bg:#ffebe9;--amber:#9a6700;--amber-bg:#fff8c5;--green:#1a7f37;--blue:#0969da;--ink:#1f2328;--muted:#59636e;--line:#d0d7de;
--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",sans-serif;color:var(--ink);background:#f6f8fa}
code,pre{font-family:var(--mono);font-size:12px;overflow-wrap:anywhere}
header.top{padding:1rem 2rem;background:#fff;border-top:6px solid var(--verdict);border-bottom:1px solid var(--line)}
header.top h1{margin:0;font-size:22px;display:flex;align-items:baseline;gap:.75rem;flex-wrap:wrap}
header.top h1 small{font-size:14px;font-weight:400;color:var(--muted)}
.badge{display:inline-block;padding:.1rem .6rem;border-radius:6px;background:var(--verdict);color:#fff;font-size:15px;font-weight:700;letter-spacing:.04em}
.lead{margin:.5rem 0 0;font-size:16px}
.verdict-VIOLATED{--verdict:var(--red)}.verdict-BOUNDED{--verdict:var(--green)}.verdict-INCOMPLETE{--verdict:#bf8700}.verdict-HELD{--verdict:var(--blue)}
main{padding:.5rem 2rem 3rem}
section{margin:1rem 0}
h2{font-size:16px;margin:0 0 .5rem}
.overview{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem;align-items:start}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:.75rem 1rem}
.card.warning{background:var(--amber-bg);border-color:#d4a72c}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.25rem 1rem;margin:0}
dl.facts dt{color:var(--muted)}dl.facts dd{margin:0}
.message{font-weight:600;color:#82071e}
.faultline{color:var(--red);font-weight:700}
ol.story{margin:0;padding-left:1.4rem}ol.story li{margin:.2rem 0}
.story .x-inline,.x-inline{display:inline-block;min-width:1.2rem;padding:0 .3rem;border-radius:9px;background:var(--red);color:#fff;font-weight:700;text-align:center}
.story .broke{color:#82071e;font-weight:600}
.tagged{background:var(--amber-bg);border:1px solid #d4a72c;border-radius:4px;padding:0 .3rem}
.legend{color:var(--muted);margin:.25rem 0 .5rem;font-size:13px}
.legend span{margin-right:1.2rem}
.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:8px;background:#fff}
.seq{display:grid;min-width:min-content;padding:0 .5rem .75rem 0}
.seq>*{min-width:0}
.head{z-index:2;margin:.6rem .3rem .4rem;padding:.35rem .4rem;border:2px solid #57606a;border-radius:6px;background:#eaeef2;text-align:center;align-self:end}
.head b{display:block;font-family:var(--mono);font-size:13px;overflow-wrap:anywhere}
.head small{display:block;color:var(--muted);font-size:11px;line-height:1.25}
.head-invocation{border-color:var(--blue);background:#ddf4ff}
.head-store{border-color:#8250df;background:#fbefff}
.life{position:relative;z-index:0}
.life::before{content:"";position:absolute;left:50%;top:0;bottom:0;border-left:2px dashed #afb8c1;margin-left:-1px}
.life-invocation::before{border-left:8px solid #b6e3ff;margin-left:-4px}
.band{z-index:0}.band-fault{background:var(--red-bg)}.band-culprit{background:var(--amber-bg)}
.num{z-index:1;color:#8c959f;font-size:12px;text-align:right;padding:.55rem .5rem 0 0;font-variant-numeric:tabular-nums}
.arrow{position:relative;z-index:1;display:flex;flex-direction:column;justify-content:flex-end;padding:.5rem 0 .55rem}
.label{font-size:13px;line-height:1.35}
.arrow .label{margin-bottom:4px}
.label>*{max-width:100%}
.line{position:relative;height:0;border-top:2px solid var(--ink)}
.line::after{content:"";position:absolute;top:-7px;border-top:6px solid transparent;border-bottom:6px solid transparent}
.rightward .line::after{right:-2px;border-left:11px solid var(--ink)}
.leftward .line::after{left:-2px;border-right:11px solid var(--ink)}
.ret .line{border-top:2px dashed #57606a}
.ret.rightward .line::after{border-left-color:#57606a}.ret.leftward .line::after{border-right-color:#57606a}
.fault .line{border-top:3px solid var(--red)}
.fault.rightward .line::after{border-left-color:var(--red)}.fault.leftward .line::after{border-right-color:var(--red)}
.fault-crash_before .line{border-top-style:dashed;opacity:.9}
.lost .line{border-top-color:var(--red)}
.failed .line{border-top-color:var(--red)}
.x{position:absolute;top:-14px;width:26px;height:26px;line-height:26px;border-radius:50%;background:var(--red);color:#fff;font-weight:700;font-size:16px;text-align:center;box-shadow:0 0 0 3px #fff;z-index:3}
.rightward .x-from,.leftward .x-to{left:-13px}
.rightward .x-to,.leftward .x-from{right:-13px}
.eid{color:var(--muted);font-family:var(--mono);font-size:12px}
.never{color:var(--red)}
.fault-box{margin-top:4px;padding:4px 8px;border-left:4px solid var(--red);background:#fff;border-radius:0 4px 4px 0;box-shadow:0 1px 2px rgba(0,0,0,.08)}
.fault-name{color:var(--red);font-weight:700;margin-right:.25rem}
.lost-why{color:var(--red);font-size:12px}
.bad{color:var(--red)}
.status{color:var(--green)}.status.bad{color:var(--red)}
.mark{position:relative;z-index:1;display:flex;align-items:center;min-height:2.6rem;padding:.35rem 0}
.mark .label{width:100%}
.dot{position:absolute;top:50%;margin-top:-14px;width:28px;height:28px;margin-left:-14px;border-radius:50%;border:2px solid #57606a;background:#fff;text-align:center;line-height:24px;font-weight:700;z-index:3}
.dead .dot{width:34px;height:34px;margin-top:-17px;margin-left:-17px;line-height:30px;font-size:20px;background:var(--red);border-color:var(--red);color:#fff}
.note{z-index:1;padding:.4rem .5rem;color:var(--muted);font-style:italic}
.stmt{margin-top:3px}
.arrow .label>.stmt,.arrow .label>details,.arrow .label>.fault-box{background:rgba(255,255,255,.9);border-radius:4px}
.sql{color:#0550ae}.params{color:#6639ba}.res{font-family:var(--mono);font-size:12px;color:var(--green)}
.part{font-family:var(--mono);font-size:11px;color:var(--muted)}
.stmt.culprit{background:var(--amber-bg);outline:2px solid #d4a72c;padding:2px 4px}
.tag{display:inline-block;margin-left:.4rem;padding:0 .45rem;border-radius:9px;background:#9a6700;color:#fff;font-size:11px;font-weight:600;font-family:system-ui,sans-serif}
details.folded summary{color:var(--muted);font-size:12px;cursor:pointer}
.cut{color:var(--muted)}
ul.writes{margin:.25rem 0 0;padding-left:1.2rem}ul.writes li{margin:.35rem 0}
pre.trace{margin:.5rem 0 0;padding:.75rem;background:#fff;border:1px solid var(--line);border-radius:6px;white-space:pre-wrap;max-height:40rem;overflow:auto}
footer{color:var(--muted);font-size:12px;padding:0 2rem 2rem}
@media print{.scroll{overflow:visible}}
`;
