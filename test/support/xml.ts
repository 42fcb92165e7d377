/**
 * A minimal XML well-formedness parser for the tests of generated SVG and
 * (XHTML-compatible) HTML: one root element, every tag closed and properly
 * nested, attribute values quoted and unique, no raw `<` in text or
 * attributes, every `&` an entity reference (the five XML ones or numeric).
 * It throws on the first violation and otherwise returns the element tree
 * with entities decoded. Prolog (`<?xml …?>`), `<!DOCTYPE …>` and comments
 * are skipped; CDATA and internal DTD subsets are not supported (refused).
 */
export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: (XmlElement | string)[];
}

const NAME = /^[A-Za-z_][\w.:-]*/;
const NAMED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

export class XmlError extends Error {}

function decode(raw: string, at: number): string {
  if (raw.includes("<")) throw new XmlError(`raw '<' at ${at}`);
  return raw.replace(/&([^;]*);?/g, (whole, body: string) => {
    if (!whole.endsWith(";")) throw new XmlError(`'&' without a reference at ${at}: ${JSON.stringify(whole.slice(0, 12))}`);
    if (Object.hasOwn(NAMED, body)) return NAMED[body]!;
    const num = /^#(\d+)$/.exec(body) ?? /^#x([0-9a-fA-F]+)$/.exec(body);
    if (num === null) throw new XmlError(`unknown entity &${body}; at ${at}`);
    return String.fromCodePoint(Number.parseInt(num[1]!, body.startsWith("#x") ? 16 : 10));
  });
}

export function parseXml(text: string): XmlElement {
  let i = 0;
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  const skipPast = (end: string, what: string) => {
    const at = text.indexOf(end, i);
    if (at < 0) throw new XmlError(`unterminated ${what} at ${i}`);
    i = at + end.length;
  };
  while (i < text.length) {
    const lt = text.indexOf("<", i);
    const chunk = text.slice(i, lt < 0 ? text.length : lt);
    if (chunk !== "") {
      const decoded = decode(chunk, i);
      if (stack.length === 0) {
        if (decoded.trim() !== "") throw new XmlError(`text outside the root element at ${i}`);
      } else {
        stack.at(-1)!.children.push(decoded);
      }
    }
    if (lt < 0) break;
    i = lt;
    if (text.startsWith("<!--", i)) {
      skipPast("-->", "comment");
    } else if (text.startsWith("<?", i)) {
      if (root !== undefined || stack.length > 0) throw new XmlError(`processing instruction after the root started at ${i}`);
      skipPast("?>", "processing instruction");
    } else if (text.startsWith("<!DOCTYPE", i)) {
      if (root !== undefined || stack.length > 0) throw new XmlError(`DOCTYPE after the root started at ${i}`);
      const end = text.indexOf(">", i);
      if (end < 0 || text.slice(i, end).includes("[")) throw new XmlError(`unsupported DOCTYPE at ${i}`);
      i = end + 1;
    } else if (text.startsWith("</", i)) {
      const name = NAME.exec(text.slice(i + 2))?.[0];
      const close = text.indexOf(">", i);
      if (name === undefined || close < 0 || text.slice(i + 2 + name.length, close).trim() !== "") throw new XmlError(`bad end tag at ${i}`);
      const open = stack.pop();
      if (open?.name !== name) throw new XmlError(`end tag </${name}> at ${i} closes <${open?.name ?? "nothing"}>`);
      i = close + 1;
    } else {
      i++;
      const name = NAME.exec(text.slice(i))?.[0];
      if (name === undefined) throw new XmlError(`bad start tag at ${i - 1}`);
      i += name.length;
      const element: XmlElement = { name, attrs: {}, children: [] };
      for (;;) {
        const space = /^\s*/.exec(text.slice(i))![0].length;
        i += space;
        if (text.startsWith("/>", i) || text.startsWith(">", i)) break;
        if (space === 0) throw new XmlError(`attributes of <${name}> need a space before them at ${i}`);
        const attr = /^([A-Za-z_][\w.:-]*)\s*=\s*("([^"]*)"|'([^']*)')/.exec(text.slice(i));
        if (attr === null) throw new XmlError(`bad attribute of <${name}> at ${i}`);
        if (Object.hasOwn(element.attrs, attr[1]!)) throw new XmlError(`duplicate attribute ${attr[1]} of <${name}> at ${i}`);
        element.attrs[attr[1]!] = decode(attr[3] ?? attr[4]!, i);
        i += attr[0].length;
      }
      if (stack.length === 0) {
        if (root !== undefined) throw new XmlError(`a second root element <${name}> at ${i}`);
        root = element;
      } else {
        stack.at(-1)!.children.push(element);
      }
      if (text.startsWith("/>", i)) {
        i += 2;
      } else {
        i += 1;
        stack.push(element);
      }
    }
  }
  if (stack.length > 0) throw new XmlError(`<${stack.at(-1)!.name}> is never closed`);
  if (root === undefined) throw new XmlError("no root element");
  return root;
}

/** Every element of the tree (depth first, the root included) that `match` accepts. */
export function findAll(root: XmlElement, match: (e: XmlElement) => boolean): XmlElement[] {
  const out: XmlElement[] = [];
  const walk = (e: XmlElement) => {
    if (match(e)) out.push(e);
    for (const c of e.children) if (typeof c !== "string") walk(c);
  };
  walk(root);
  return out;
}

/** The element's text content, entities decoded. */
export function textOf(e: XmlElement): string {
  return e.children.map((c) => (typeof c === "string" ? c : textOf(c))).join("");
}

/** Elements whose class attribute lists `name`. */
export const byClass = (root: XmlElement, name: string): XmlElement[] => findAll(root, (e) => (e.attrs.class ?? "").split(/\s+/).includes(name));
