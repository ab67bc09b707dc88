import assert from "node:assert/strict";
import { test } from "node:test";

import { commandUri, paperLinkLocation, rewriteHoverMarkdown } from "../src/logic/links";
import { pageHtml } from "../src/logic/paperView";
import { smokeFromResult, statusText } from "../src/logic/status";

// A hover as the server writes it (server/hover.py): an image as a data: URI, links to the paper.
const IMAGE = '![Eq. (3)](data:image/png;base64,iVBORw0KGgo= "180 px wide")';
const SIZED_FOR_VS_CODE = "![Eq. (3)](data:image/png;base64,iVBORw0KGgo=|width=180)";
const HOVER_PDF = `**Eq. (3)** · §2.1 Mixing Images and Labels

${IMAGE}

Open in the paper: [paper.pdf p.3](file:///home/ada/my%20paper/paper.pdf#page=3)
`;
const HOVER_TEX = `> we use a weight decay of 0.05

— [sections/experiments.tex:12:5](file:///home/ada/paper/sections/experiments.tex#L12,5)
`;

test("a PDF link becomes the paper view's command at the page; the image gets VS Code's width", () => {
  const { markdown, rewritten } = rewriteHoverMarkdown(HOVER_PDF);
  assert.equal(rewritten, 2);
  assert.ok(markdown.includes(SIZED_FOR_VS_CODE), markdown);
  const link = /\[paper\.pdf p\.3\]\((command:[^)]+)\)/.exec(markdown)?.[1];
  assert.ok(link, markdown);
  assert.ok(link.startsWith("command:paperlens.showPaper?"));
  const args = JSON.parse(decodeURIComponent(link.split("?")[1]));
  assert.deepEqual(args, [{ file: "/home/ada/my paper/paper.pdf", page: 3 }]);
});

test("text links (VS Code opens them at the line) are left alone", () => {
  assert.deepEqual(rewriteHoverMarkdown(HOVER_TEX), { markdown: HOVER_TEX, rewritten: 0 });
  assert.deepEqual(rewriteHoverMarkdown("no links"), { markdown: "no links", rewritten: 0 });
});

test("paper links as locations (0-based, as the server's commands take them)", () => {
  assert.deepEqual(paperLinkLocation("file:///home/ada/paper/sections/method.tex#L21,1"), { file: "/home/ada/paper/sections/method.tex", line: 20, column: 0 });
  assert.deepEqual(paperLinkLocation("file:///home/ada/paper/main.md#L3"), { file: "/home/ada/paper/main.md", line: 2, column: 0 });
  assert.deepEqual(paperLinkLocation("file:///p/paper.pdf#page=2&bbox=72,100.5,540,130"), { file: "/p/paper.pdf", page: 2, bbox: [72, 100.5, 540, 130] });
  assert.deepEqual(paperLinkLocation("file:///p/paper.pdf"), { file: "/p/paper.pdf" });
  assert.equal(paperLinkLocation("https://example.org/paper.pdf#page=2"), undefined);
});

test("command links survive parentheses in paths", () => {
  const uri = commandUri("paperlens.showPaper", [{ file: "/a (copy)/paper.pdf", page: 1 }]);
  assert.ok(!/[()]/.test(uri));
  assert.deepEqual(JSON.parse(decodeURIComponent(uri.split("?")[1])), [{ file: "/a (copy)/paper.pdf", page: 1 }]);
});

test("the page view draws the box and scrolls to it; only a PNG data: image is shown", () => {
  const html = pageHtml({ kind: "page", image: "data:image/png;base64,iVBORw0KGgo=", width: 1275, height: 1650, highlight: [200, 400, 900, 460], page: 3, title: "Tempered <Label> Mixing, page 3" }, "abc");
  assert.match(html, /#box \{ left: 15\.373%; top: 24\.000%; width: 55\.529%; height: 4\.121%; \}/);
  assert.match(html, /max-width: 1275px; aspect-ratio: 1275 \/ 1650;/);
  assert.match(html, /scrollIntoView/);
  assert.match(html, /Tempered &lt;Label&gt; Mixing, page 3/);
  assert.match(html, /script-src 'nonce-abc'/);
  const hostile = pageHtml({ kind: "page", image: "javascript:alert(1)", width: 10, height: 10, highlight: null, page: 1, title: "" }, "n");
  assert.ok(!hostile.includes("javascript:") && !hostile.includes('id="box"'));
});

test("the status bar: starting, indexing, ready with counts, the last smoke run", () => {
  const counts = { error: 0, warning: 3, info: 1, hint: 1 };
  assert.equal(statusText({ phase: "starting", counts }).text, "$(loading~spin) paperlens");
  const indexing = statusText({ phase: "indexing", progress: "indexing the workspace: 50/500 files", counts });
  assert.equal(indexing.text, "$(sync~spin) paperlens: indexing…");
  assert.match(indexing.tooltip, /50\/500/);
  assert.equal(statusText({ phase: "ready", counts }).text, "$(book) paperlens $(warning) 3 $(info) 2");
  assert.equal(statusText({ phase: "ready", counts: { error: 0, warning: 0, info: 0, hint: 0 } }).text, "$(book) paperlens $(check)");
  const smoked = statusText({ phase: "ready", counts, smoke: smokeFromResult({ status: "failed", failures: [{}, {}], duration_seconds: 4.25 }) });
  assert.equal(smoked.text, "$(book) paperlens $(warning) 3 $(info) 2 · $(error) smoke 2");
  assert.match(smoked.tooltip, /last smoke run: failed in 4.3 s/);
  const explained = statusText({ phase: "ready", counts, smoke: smokeFromResult({ status: "passed", duration_seconds: 2, message: "passed in 2.0 s" }) });
  assert.match(explained.tooltip, /last smoke run: passed in 2.0 s$/m);
  assert.deepEqual(smokeFromResult(null), { status: "cancelled" });
  assert.equal(smokeFromResult({ status: "error", message: "no Docker engine" }).message, "no Docker engine");
});
