// The paper view's page: the PDF page as an image with the item's box drawn and scrolled into view.
// Plain logic: no `vscode` import.

/** What `paperlens.paperView` answers for a PDF page. */
export interface PageView {
  kind: "page";
  image: string;
  width: number;
  height: number;
  highlight: [number, number, number, number] | null;
  page: number;
  title: string;
}

/** What it answers for a text source (0-based line and column). */
export interface SourceView {
  kind: "source";
  uri: string;
  line: number;
  column: number;
  /** Where the item ends, when the server says (else the rest of the start line is selected). */
  endLine?: number;
  endColumn?: number;
}

export type PaperView = PageView | SourceView;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

export function isPaperView(value: unknown): value is PaperView {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  if (v.kind === "source") return typeof v.uri === "string" && Number.isInteger(v.line);
  if (v.kind === "page") {
    return typeof v.image === "string" && Number.isFinite(v.width) && Number.isFinite(v.height) && Number.isInteger(v.page);
  }
  return false;
}

/** The webview's HTML. Only a PNG `data:` image is shown; the page's script does one thing:
 * scroll the box into view. */
export function pageHtml(view: PageView, nonce: string): string {
  const png = /^data:image\/png;base64,[A-Za-z0-9+/=]+$/.test(view.image) ? view.image : "";
  const width = Math.max(1, Math.round(view.width));
  const height = Math.max(1, Math.round(view.height));
  // The page fits the panel's width (never above its own size); the box is placed in percent of
  // the page, with a small margin, so it stays on the item at any width.
  const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(3)}%`;
  let box = "";
  if (view.highlight && view.highlight.length === 4 && view.highlight.every(Number.isFinite)) {
    const [x0, y0, x1, y1] = view.highlight;
    const margin = 4;
    box = `#box { left: ${pct(x0 - margin, width)}; top: ${pct(y0 - margin, height)}; width: ${pct(Math.max(x1 - x0, 1) + 2 * margin, width)}; height: ${pct(Math.max(y1 - y0, 1) + 2 * margin, height)}; }`;
  }
  const title = escapeHtml(view.title || `page ${view.page}`);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'nonce-${nonce}'; script-src 'nonce-${nonce}';">
<title>${title}</title>
<style nonce="${nonce}">
  body { margin: 0; padding: 12px 16px 48px; background: var(--vscode-editor-background); color: var(--vscode-foreground); font-family: var(--vscode-font-family); }
  header { margin-bottom: 10px; font-size: 13px; opacity: 0.85; }
  .page { position: relative; width: 100%; max-width: ${width}px; aspect-ratio: ${width} / ${height}; margin: 0 auto; background: white; box-shadow: 0 2px 10px rgba(0, 0, 0, 0.5); }
  .page img { display: block; width: 100%; height: 100%; }
  #box { position: absolute; border: 3px solid #f5a623; border-radius: 3px; background: rgba(255, 200, 0, 0.18); pointer-events: none; }
  ${box}
</style>
</head>
<body>
<header>${title}</header>
<div class="page">
  <img id="page" alt="page ${view.page} of the paper" src="${png}">
  ${box ? '<div id="box"></div>' : ""}
</div>
<script nonce="${nonce}">
  const box = document.getElementById("box");
  if (box) box.scrollIntoView({ block: "center" });
</script>
</body>
</html>
`;
}
