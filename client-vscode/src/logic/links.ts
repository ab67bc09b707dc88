// The server's links into the paper (`file:///…/x.tex#L12,5`, `file:///…/paper.pdf#page=3`) and
// their rewriting in hovers, so that a PDF link opens the paper view. Plain logic: no `vscode`.

import { fileURLToPath } from "url";

/** A place in the paper as the server's commands take it (see schemas: Location). `file` may be
 * absolute: the server joins it to the paper's folder, which keeps an absolute path as it is. */
export interface PaperLocation {
  file: string;
  line?: number;
  column?: number;
  page?: number;
  bbox?: [number, number, number, number];
}

export const SHOW_PAPER = "paperlens.showPaper";

/** A `file:` link into the paper as a location (0-based line and column, as LSP counts), or
 * undefined when the link is not one. */
export function paperLinkLocation(link: string): PaperLocation | undefined {
  if (!link.startsWith("file:")) return undefined;
  const [base, fragment = ""] = link.split("#", 2);
  let file: string;
  try {
    file = fileURLToPath(base);
  } catch {
    return undefined;
  }
  const location: PaperLocation = { file };
  const lineMatch = /^L(\d+)(?:,(\d+))?/.exec(fragment);
  if (lineMatch) {
    location.line = Math.max(Number(lineMatch[1]) - 1, 0);
    location.column = lineMatch[2] ? Math.max(Number(lineMatch[2]) - 1, 0) : 0;
    return location;
  }
  const params = new URLSearchParams(fragment);
  const page = Number(params.get("page"));
  if (Number.isInteger(page) && page >= 1) location.page = page;
  const bbox = (params.get("bbox") ?? "").split(",").map(Number);
  if (bbox.length === 4 && bbox.every(Number.isFinite)) location.bbox = bbox as [number, number, number, number];
  return location;
}

/** A `command:` URI that runs `command` with `args`, safe inside a Markdown link. */
export function commandUri(command: string, args: unknown[]): string {
  const encoded = encodeURIComponent(JSON.stringify(args)).replace(/\(/g, "%28").replace(/\)/g, "%29");
  return `command:${command}?${encoded}`;
}

const MARKDOWN_LINK = /\]\((file:[^)\s]+)\)/g;
// The server's equation image: standard Markdown whose title gives the width to show it at.
const SIZED_IMAGE = /(!\[[^\]]*\]\(data:[^)\s]+) "(\d+) px wide"\)/g;

/** PDF links in hover Markdown become links that open the paper view at the page; an equation
 * image gets VS Code's `|width=` so that it shows at its size (it is drawn larger for sharpness);
 * everything else (text links, which VS Code opens at the line) stays as it is. */
export function rewriteHoverMarkdown(markdown: string): { markdown: string; rewritten: number } {
  let rewritten = 0;
  const out = markdown
    .replace(MARKDOWN_LINK, (whole, link: string) => {
      const location = paperLinkLocation(link);
      if (!location || !/\.pdf$/i.test(location.file)) return whole;
      rewritten += 1;
      return `](${commandUri(SHOW_PAPER, [location])})`;
    })
    .replace(SIZED_IMAGE, (_whole, image: string, width: string) => {
      rewritten += 1;
      return `${image}|width=${width})`;
    });
  return { markdown: out, rewritten };
}
