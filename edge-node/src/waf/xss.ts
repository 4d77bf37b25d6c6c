// Cross-site scripting detection by reading the value as HTML (written for this project): tags that run script
// whatever their attributes, any tag carrying an event handler or a script URL, event handlers injected after a
// quote outside any tag, script URLs (`javascript:`, `vbscript:`, `data:text/html`) followed by code, and script
// calls. A hand-written scan, linear in the value.

export interface XssFinding {
  id: string;
  pl: number;
  at: number;
}

/** Tags that run script or load a document whatever their attributes. */
const SCRIPT_TAGS = new Set([
  'script',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'applet',
  'base',
  'isindex',
  'vmlframe',
  'xss',
  'import',
  'portal',
]);
/** HTML and SVG element names: a tag of these at paranoia 2. */
const HTML_TAGS = new Set(
  (
    'a abbr address animate animatetransform area article aside audio b bdo bgsound blink blockquote body br button ' +
    'canvas caption center cite code col colgroup command content data datalist dd del details dfn dialog dir div ' +
    'dl dt element em fieldset figcaption figure font footer foreignobject form h1 h2 h3 h4 h5 h6 head header hgroup ' +
    'hr html i image img input ins kbd keygen label layer legend li link listing main map mark marquee math menu ' +
    'menuitem meta meter multicol nav nextid nobr noembed noframes noscript ol optgroup option output p param ' +
    'picture plaintext pre progress q rb rp rt rtc ruby s samp section select set shadow slot small source spacer ' +
    'span strike strong style sub summary sup svg table tbody td template textarea tfoot th thead time title tr ' +
    'track tt u ul use var video wbr xmp'
  ).split(' '),
);
/** Attributes whose value is a URL (a `javascript:` value there runs). */
const URL_ATTRS = new Set([
  'href',
  'src',
  'action',
  'formaction',
  'data',
  'xlink:href',
  'background',
  'dynsrc',
  'lowsrc',
  'poster',
  'codebase',
  'values',
  'to',
  'from',
  'by',
  'attributename',
]);
/** DOM event names after `on` (prefix families below cover mouse*, key*, pointer*, drag*, touch*, animation*, …). */
const EVENTS = new Set(
  (
    'abort activate afterprint afterscriptexecute auxclick beforeactivate beforecopy beforecut beforedeactivate ' +
    'beforeinput beforeprint beforescriptexecute beforetoggle beforeunload begin blur bounce canplay ' +
    'canplaythrough change click close contextmenu copy cuechange cut dblclick deactivate durationchange end ' +
    'ended error finish focus focusin focusout formdata fullscreenchange hashchange input invalid load ' +
    'loadeddata loadedmetadata loadend loadstart message mozfullscreenchange offline online pagehide pageshow ' +
    'paste pause play playing popstate progress ratechange readystatechange repeat reset resize scroll ' +
    'scrollend search seeked seeking select selectionchange selectstart show start storage submit suspend ' +
    'timeupdate toggle unload volumechange waiting wheel webkitanimationend webkitanimationstart ' +
    'webkittransitionend zoom'
  ).split(' '),
);
const EVENT_PREFIXES = ['mouse', 'key', 'pointer', 'drag', 'drop', 'touch', 'animation', 'transition', 'content'];

function isLetter(c: number): boolean {
  return c >= 97 && c <= 122;
}
function isIdent(c: number): boolean {
  return isLetter(c) || (c >= 48 && c <= 57) || c === 95 || c === 36;
}
function isNameChar(c: number): boolean {
  return isLetter(c) || (c >= 48 && c <= 57) || c === 45 || c === 58 || c === 95;
}

/** An event handler name at `i` (just after `on`), followed by `=`: the index after `=`, else -1. */
function handlerAt(s: string, i: number): number {
  let j = i;
  const max = Math.min(s.length, i + 31);
  while (j < max && isLetter(s.charCodeAt(j))) j++;
  if (j === i || j - i > 30) return -1;
  const name = s.slice(i, j);
  if (!EVENTS.has(name) && !EVENT_PREFIXES.some((p) => name.startsWith(p))) return -1;
  while (s.charCodeAt(j) === 32 || s.charCodeAt(j) === 47) j++;
  return s.charCodeAt(j) === 61 ? j + 1 : -1;
}

/**
 * A script URL at `i`: `javascript:` / `vbscript:` / `livescript:` (spaces and control characters between the letters
 * are dropped, as browsers do) followed by code, or `data:` with an HTML or SVG type. Returns its length or 0.
 */
function scriptUrlAt(s: string, i: number): boolean {
  let word = '';
  let j = i;
  while (j < s.length && word.length < 12) {
    const c = s.charCodeAt(j);
    if (c === 32 || c < 32) {
      j++;
      continue;
    }
    if (c === 58) break;
    if (!isLetter(c)) return false;
    word += s[j];
    j++;
  }
  if (s.charCodeAt(j) !== 58) return false;
  const rest = s.slice(j + 1, j + 200);
  if (word === 'javascript' || word === 'vbscript' || word === 'livescript') {
    // Code follows: a call, a property, an assignment, a template, a `//` comment line, an escape.
    for (let k = 0; k < rest.length; k++) {
      const c = rest.charCodeAt(k);
      if (c === 40 || c === 96 || c === 61 || c === 46 || c === 91 || c === 92 || c === 47 || c === 59) return true;
    }
    return false;
  }
  if (word === 'data') {
    const t = rest.trimStart();
    return (
      t.startsWith('text/html') ||
      t.startsWith('image/svg') ||
      t.startsWith('application/x-') ||
      t.startsWith('text/javascript') ||
      t.startsWith('application/javascript') ||
      t.startsWith('text/xml') ||
      t.startsWith(',<')
    );
  }
  return false;
}

/** Script calls that mark an injection (`alert(1)`, ``prompt`1` ``) and, at paranoia 2, script sinks. */
const CALLS_PL1 = ['alert', 'prompt', 'confirm'];
const SINKS_PL2 = [
  'eval(',
  'settimeout(',
  'setinterval(',
  'new function(',
  'document.cookie',
  'document.write',
  'document.domain',
  'document.location',
  'window.location',
  'location.href=',
  '.innerhtml',
  '.outerhtml',
  'fromcharcode(',
  'atob(',
  'import(',
  'constructor(',
];

/** XSS findings in one folded value at paranoia `pl` or below. */
export function detectXss(s: string, pl: number, out: XssFinding[]): void {
  const n = s.length;
  const styleScript = s.indexOf('expression(') >= 0 || s.indexOf('javascript:') >= 0;
  let firstQuote = s.indexOf('"');
  const sq = s.indexOf("'");
  if (sq >= 0 && (firstQuote < 0 || sq < firstQuote)) firstQuote = sq;
  for (let i = s.indexOf('<'); i >= 0 && i < n; i = s.indexOf('<', i + 1)) {
    let j = i + 1;
    if (s.charCodeAt(j) === 47) j++;
    const nameStart = j;
    while (j < n && isNameChar(s.charCodeAt(j))) j++;
    if (j === nameStart || !isLetter(s.charCodeAt(nameStart))) {
      if (pl >= 3 && (s.startsWith('!--', i + 1) || s.startsWith('![cdata[', i + 1) || s.startsWith('?', i + 1)))
        out.push({ id: '941180', pl: 3, at: i });
      continue;
    }
    const name = s.slice(nameStart, j);
    const bare = name.startsWith('svg:') ? name.slice(4) : name;
    if (SCRIPT_TAGS.has(bare)) {
      out.push({ id: '941110', pl: 1, at: i });
      return;
    }
    // The tag's attributes up to `>` (or the end): handlers, script URLs, srcdoc, style expressions.
    // Linear: the scan stops at the next `<` too, so no character is read for two tags.
    const end = s.indexOf('>', j);
    const next = s.indexOf('<', j);
    let stop = end < 0 ? n : end;
    if (next >= 0 && next < stop) stop = next;
    for (let k = j; k < stop; k++) {
      const c = s.charCodeAt(k);
      if (c === 111 && s.charCodeAt(k + 1) === 110 && !isNameChar(s.charCodeAt(k - 1)) && handlerAt(s, k + 2) > 0) {
        out.push({ id: '941120', pl: 1, at: i });
        return;
      }
      if (c === 61) {
        // attr=value: the name before `=`, the value after (quotes skipped)
        let a = k - 1;
        while (a > j && s.charCodeAt(a) === 32) a--;
        let b = a;
        while (b > j && isNameChar(s.charCodeAt(b))) b--;
        const attr = s.slice(b + 1, a + 1);
        let v = k + 1;
        while (s.charCodeAt(v) === 32 || s.charCodeAt(v) === 34 || s.charCodeAt(v) === 39 || s.charCodeAt(v) === 96)
          v++;
        if (attr === 'srcdoc' || (URL_ATTRS.has(attr) && scriptUrlAt(s, v))) {
          out.push({ id: '941170', pl: 1, at: i });
          return;
        }
        if (attr === 'style' && styleScript) {
          out.push({ id: '941170', pl: 1, at: i });
          return;
        }
      }
    }
    if ((bare === 'style' || bare === 'link' || bare === 'meta') && pl >= 1) {
      const body = s.slice(j, j + 400);
      if (
        body.indexOf('expression(') >= 0 ||
        body.indexOf('@import') >= 0 ||
        body.indexOf('refresh') >= 0 ||
        body.indexOf('import') >= 0
      ) {
        out.push({ id: '941130', pl: 1, at: i });
        return;
      }
    }
    if (pl >= 2 && HTML_TAGS.has(bare)) {
      out.push({ id: '941320', pl: 2, at: i });
      return;
    }
  }
  // Outside tags: an event handler after a quote or a separator (attribute injection: `" onfocus=alert(1) x="`).
  for (let i = s.indexOf('on'); i >= 0; i = s.indexOf('on', i + 2)) {
    const p = i === 0 ? 32 : s.charCodeAt(i - 1);
    if (p === 34 || p === 39 || p === 96 || p === 47 || p === 59 || (p === 32 && firstQuote >= 0 && firstQuote < i)) {
      if (handlerAt(s, i + 2) > 0) {
        out.push({ id: '941120', pl: 1, at: i });
        return;
      }
    }
  }
  // Script URLs: at the start, or after `=`, a quote, `(` (url(…)) or a space.
  for (let i = s.indexOf(':'); i >= 0; i = s.indexOf(':', i + 1)) {
    let a = i - 1;
    while (a >= 0 && (isLetter(s.charCodeAt(a)) || s.charCodeAt(a) === 32)) a--;
    if (a + 1 < i && scriptUrlAt(s, a + 1)) {
      out.push({ id: '941210', pl: 1, at: a + 1 });
      return;
    }
  }
  for (const f of CALLS_PL1) {
    for (let i = s.indexOf(f); i >= 0; i = s.indexOf(f, i + 1)) {
      if (i > 0 && (isIdent(s.charCodeAt(i - 1)) || s.charCodeAt(i - 1) === 46)) continue;
      let j = i + f.length;
      while (s.charCodeAt(j) === 32) j++;
      const c = s.charCodeAt(j);
      if (c === 96 || (c === 40 && s.charCodeAt(j + 1) !== 41 && j + 1 < n)) {
        out.push({ id: '941390', pl: 1, at: i });
        return;
      }
    }
  }
  if (s.indexOf('{{') >= 0 && (s.indexOf('constructor') >= 0 || s.indexOf('$eval') >= 0 || s.indexOf('$on.') >= 0)) {
    out.push({ id: '941380', pl: 1, at: s.indexOf('{{') });
    return;
  }
  if (pl >= 2)
    for (const f of SINKS_PL2) {
      const i = s.indexOf(f);
      if (i >= 0) {
        out.push({ id: '941330', pl: 2, at: i });
        return;
      }
    }
}
