// The managed rules of the waf rule type (edge-node/src/waf): their ids, classes, paranoia levels and severities.
// Shared so that the API validates exclusions against the same set the edge scores with. Ids follow the OWASP CRS
// families (920 protocol, 930 LFI, 941 XSS, 942 SQLi, …); the rules themselves were written for this project.

export const WAF_CLASSES = [
  'protocol',
  'scanner',
  'lfi',
  'rfi',
  'rce',
  'php',
  'generic',
  'xss',
  'sqli',
  'java',
] as const;
export type WafClass = (typeof WAF_CLASSES)[number];

/** The class of a rule id, by its family (CRS numbering: 920 protocol, 930 LFI, 942 SQLi, …). */
export function classOf(id: string): WafClass {
  switch (id.slice(0, 3)) {
    case '911':
    case '920':
    case '921':
      return 'protocol';
    case '913':
      return 'scanner';
    case '930':
      return 'lfi';
    case '931':
      return 'rfi';
    case '932':
      return 'rce';
    case '933':
      return 'php';
    case '934':
      return 'generic';
    case '941':
      return 'xss';
    case '942':
      return 'sqli';
    default:
      return 'java';
  }
}

/** Every rule of the set: id → [paranoia level, severity (critical 5, warning 3, notice 2), description]. */
export const WAF_RULES: Readonly<Record<string, readonly [number, number, string]>> = {
  '911100': [1, 5, 'method not allowed'],
  '913100': [1, 5, 'security scanner user agent'],
  '920160': [1, 5, 'Content-Length not a number'],
  '920170': [1, 5, 'GET or HEAD request with a body'],
  '920200': [1, 5, 'Range header with too many ranges'],
  '920220': [1, 3, 'invalid URL encoding'],
  '920260': [1, 3, 'full-width or overlong Unicode encoding'],
  '920270': [1, 5, 'NUL byte in the request'],
  '920300': [2, 2, 'request without Accept'],
  '920320': [2, 2, 'request without User-Agent'],
  '920330': [1, 2, 'empty User-Agent'],
  '920380': [1, 5, 'too many arguments'],
  '920450': [1, 5, 'restricted request header (Proxy)'],
  '920480': [1, 5, 'request charset not allowed'],
  '920540': [1, 5, 'request body not parsable as its content type'],
  '921110': [1, 5, 'request smuggling: a request line inside the request'],
  '921120': [1, 5, 'response splitting: a status line after a line break'],
  '921130': [1, 5, 'header injection: a header after a line break'],
  '930100': [1, 5, 'path traversal'],
  '930110': [2, 5, 'path traversal (one step)'],
  '930120': [1, 5, 'access to a restricted file'],
  '930130': [1, 5, 'restricted file in the path'],
  '930140': [1, 5, 'file inclusion through a stream wrapper'],
  '931100': [1, 5, 'remote file inclusion: URL with an IP address'],
  '931120': [2, 5, 'remote file inclusion: URL ending in ?'],
  '932100': [1, 5, 'command injection after a shell separator'],
  '932105': [1, 5, 'command injection through substitution'],
  '932120': [2, 5, 'command line as a value'],
  '932160': [1, 5, 'shell or interpreter invocation'],
  '932170': [1, 5, 'Shellshock function definition'],
  '932190': [1, 5, 'shell wildcard path evasion'],
  '932230': [1, 5, '$IFS space evasion'],
  '933100': [1, 5, 'PHP open tag'],
  '933110': [1, 5, 'upload of a script file'],
  '933130': [1, 5, 'PHP superglobal'],
  '933150': [1, 5, 'high-risk PHP function call'],
  '933160': [1, 5, 'PHP function call'],
  '933170': [1, 5, 'serialized PHP object'],
  '934100': [1, 5, 'Node.js code injection'],
  '934130': [1, 5, 'prototype pollution'],
  '934150': [1, 5, 'server-side template injection'],
  '934160': [2, 5, 'template expression probe'],
  '941110': [1, 5, 'XSS: script-running tag'],
  '941120': [1, 5, 'XSS: event handler'],
  '941130': [1, 5, 'XSS: style, link or meta abuse'],
  '941170': [1, 5, 'XSS: script URL or srcdoc attribute'],
  '941180': [3, 5, 'XSS: HTML comment, CDATA or processing instruction'],
  '941210': [1, 5, 'XSS: script URL'],
  '941320': [2, 5, 'XSS: HTML tag'],
  '941330': [2, 5, 'XSS: script sink'],
  '941380': [1, 5, 'XSS: client-side template injection'],
  '941390': [1, 5, 'XSS: script call'],
  '942100': [1, 5, 'SQLi: union select'],
  '942110': [1, 5, 'SQLi: time delay or file function'],
  '942120': [1, 5, 'SQLi: subquery'],
  '942130': [1, 5, 'SQLi: tautology'],
  '942140': [1, 5, 'SQLi: system catalog or executable comment'],
  '942150': [1, 5, 'SQLi: string closed and the rest commented out'],
  '942160': [1, 5, 'SQLi: string closed then a boolean operator'],
  '942170': [1, 5, 'SQLi: stacked statement'],
  '942180': [1, 5, 'SQLi: string closed then union, select or parenthesis'],
  '942190': [1, 5, 'SQLi: string closed then a clause (order by, having, …)'],
  '942200': [1, 5, 'SQLi: string concatenated with a call'],
  '942210': [2, 5, 'SQLi: string closed then an operator and a literal'],
  '942220': [3, 5, 'SQLi: string closed then punctuation'],
  '942240': [2, 5, 'SQLi: SQL function after an operator'],
  '942250': [2, 5, 'SQLi: select … from'],
  '942260': [2, 5, 'SQLi: comment between tokens'],
  '942270': [3, 5, 'SQLi: select with from'],
  '942280': [4, 5, 'SQLi: quote next to SQL punctuation'],
  '944100': [1, 5, 'Java: class or deserialization gadget'],
  '944110': [1, 5, 'Java: OGNL or expression language injection'],
  '944150': [1, 5, 'Java: JNDI lookup (Log4Shell)'],
};

/** Whether `entry` names managed rules: an id, a prefix of ids (`942`, `9421`), or a class name. */
export function namesWafRules(entry: string): boolean {
  if ((WAF_CLASSES as readonly string[]).includes(entry)) return true;
  if (entry.length < 3) return false;
  for (const id of Object.keys(WAF_RULES)) if (id.startsWith(entry)) return true;
  return false;
}

/**
 * The default protection: a waf rule created with every domain (every plan), zone-wide, enforced, paranoia 1,
 * threshold 5, listed after the domain's own waf rules. Its stored fields carry `default_protection: true` (read
 * only, ignored on input) so that the status and restore operations find it again after edits.
 */
export const WAF_DEFAULT_MARK = 'default_protection';
export const WAF_DEFAULT_PRIORITY = 1000;
export const WAF_DEFAULT_BODY: Readonly<Record<string, unknown>> = {
  priority: WAF_DEFAULT_PRIORITY,
  paranoia_level: 1,
  anomaly_threshold: 5,
};
