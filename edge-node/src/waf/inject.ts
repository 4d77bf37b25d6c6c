// Path traversal and file inclusion, remote file inclusion, command injection (Unix and Windows shells), PHP, Java
// (JNDI lookups, class loaders), Node.js and template injection: hand-written scans of a folded value, each linear in
// its length. Written for this project; the classes follow the OWASP CRS families (930, 931, 932, 933, 934, 944).

export interface Finding {
  id: string;
  pl: number;
  at: number;
}

/** Files and directories no request parameter names but an attacker's. */
const SENSITIVE_FILES = [
  'etc/passwd',
  'etc/shadow',
  'etc/group',
  'etc/hosts',
  'etc/issue',
  'etc/hostname',
  'etc/sudoers',
  'etc/crontab',
  'etc/profile',
  'etc/mysql/my.cnf',
  'etc/apache2/',
  'etc/nginx/',
  'etc/ssh/',
  'proc/self/',
  'proc/version',
  'proc/net/',
  'proc/1/',
  'var/log/',
  'var/run/secrets',
  'root/.ssh',
  '.ssh/id_rsa',
  '.ssh/authorized_keys',
  '.bash_history',
  '.htpasswd',
  '.htaccess',
  'wp-config.php',
  '.git/config',
  '.git/head',
  '.svn/entries',
  '.aws/credentials',
  '.docker/config.json',
  'web-inf/web.xml',
  'web.config',
  'windows/win.ini',
  'winnt/win.ini',
  'windows/system.ini',
  'boot.ini',
  'windows/system32',
  'system32/config/sam',
  'inetpub/wwwroot',
  'autoexec.bat',
];

/** SENSITIVE_FILES by their first character: one look-up per boundary of the value instead of a search per file. */
const FILES_BY_FIRST = new Map<number, string[]>();
for (const f of SENSITIVE_FILES) {
  const list = FILES_BY_FIRST.get(f.charCodeAt(0));
  if (list) list.push(f);
  else FILES_BY_FIRST.set(f.charCodeAt(0), [f]);
}

/**
 * Where a sensitive file is named: at a path boundary (the start, after `/`, `\`, `=`, a space, a quote or a drive
 * letter's `:`), or anywhere for the dotfiles. `\` reads as `/`. One pass, a map look-up per boundary.
 */
function sensitiveFile(s: string): number {
  if (s.indexOf('/') < 0 && s.indexOf('\\') < 0 && s.indexOf('.') < 0) return -1;
  const p = s.indexOf('\\') >= 0 ? s.replaceAll('\\', '/') : s;
  for (let i = 0; i < p.length; i++) {
    const b = i === 0 ? 47 : p.charCodeAt(i - 1);
    const c = p.charCodeAt(i);
    if (c !== 46 && !(b === 47 || b === 61 || b === 32 || b === 58 || b === 39 || b === 34)) continue;
    const list = FILES_BY_FIRST.get(c);
    if (list) for (const f of list) if (p.startsWith(f, i)) return i;
  }
  return -1;
}

/** Stream wrappers and schemes that include or run a file. */
const WRAPPERS = [
  'php://',
  'file://',
  'expect://',
  'phar://',
  'zip://',
  'compress.zlib://',
  'glob://',
  'data://',
  'ssh2.',
  'rar://',
  'ogg://',
  'gopher://',
  'dict://',
  'jar:',
  'netdoc:',
  'ldap://',
];

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}
function isAlnum(c: number): boolean {
  return (c >= 97 && c <= 122) || isDigit(c) || c === 95;
}

/** `../` or `..\` runs (also `.../`, `..;/`): how many. `s` has `\` read as `/` by the caller's path form or not. */
function traversals(s: string): number {
  let count = 0;
  for (let i = s.indexOf('..'); i >= 0; i = s.indexOf('..', i + 2)) {
    let j = i + 2;
    while (s.charCodeAt(j) === 46) j++;
    if (s.charCodeAt(j) === 59) j++; // `..;/` (Tomcat path parameters)
    const c = s.charCodeAt(j);
    const before = i === 0 ? 47 : s.charCodeAt(i - 1);
    if (
      (c === 47 || c === 92 || j >= s.length) &&
      (before === 47 || before === 92 || before === 61 || i === 0 || before === 32)
    )
      count++;
  }
  return count;
}

/**
 * Path traversal and local file inclusion (930): `../` runs, restricted files, wrappers. `path`: the value is the
 * request path (a single `..` segment there is already an attack: browsers resolve them).
 */
/** Files a site never serves: dotfiles holding secrets or repositories, configuration with credentials. */
const RESTRICTED_IN_PATH = [
  '/.env',
  '/.git/',
  '/.git',
  '/.svn/',
  '/.hg/',
  '/.htaccess',
  '/.htpasswd',
  '/.ds_store',
  '/.aws/',
  '/.ssh/',
  '/.bash_history',
  '/.npmrc',
  '/.docker/',
  '/.idea/',
  '/.vscode/sftp.json',
  '/wp-config.php',
  '/web.config',
  '/web-inf/',
  '/meta-inf/',
  '/phpinfo.php',
  '/server-status',
  '/.kube/',
];

/** A restricted file in the (normalised, lower-case) request path (930130). */
export function restrictedPath(path: string): number {
  for (const r of RESTRICTED_IN_PATH) {
    const i = path.indexOf(r);
    if (i < 0) continue;
    const end = i + r.length;
    const c = path.charCodeAt(end);
    // the whole segment or a variant (`/.env.local`, `/.git/HEAD`), not `/.environment-guide`
    if (r.endsWith('/') || end === path.length || c === 47 || c === 46 || c === 126 || c === 95) return i;
  }
  return -1;
}

export function detectLfi(s: string, pl: number, path: boolean, out: Finding[]): void {
  const t = s.indexOf('..') >= 0 ? traversals(s) : 0;
  if (t >= 2 || (t === 1 && path)) {
    out.push({ id: '930100', pl: 1, at: s.indexOf('..') });
    return;
  }
  const f = sensitiveFile(s);
  if (f >= 0) {
    out.push({ id: '930120', pl: 1, at: f });
    return;
  }
  if (t === 1) {
    if (pl >= 2) out.push({ id: '930110', pl: 2, at: s.indexOf('..') });
  }
  if (s.indexOf(':') >= 0) {
    for (const w of WRAPPERS) {
      const i = s.indexOf(w);
      if (i >= 0 && (i === 0 || !isAlnum(s.charCodeAt(i - 1)))) {
        out.push({ id: '930140', pl: 1, at: i });
        return;
      }
    }
  }
}

/** `http://1.2.3.4/x.txt?` style remote includes (931): a URL to an IP address, or one ending in `?`. */
export function detectRfi(s: string, pl: number, out: Finding[]): void {
  for (let i = s.indexOf('://'); i >= 0; i = s.indexOf('://', i + 3)) {
    const scheme = s.slice(Math.max(0, i - 5), i);
    if (!(scheme.endsWith('http') || scheme.endsWith('https') || scheme.endsWith('ftp') || scheme.endsWith('ftps')))
      continue;
    let j = i + 3;
    // user-info@host
    for (let k = j; k < s.length && k < j + 128; k++) {
      const c = s.charCodeAt(k);
      if (c === 47 || c === 32) break;
      if (c === 64) {
        j = k + 1;
        break;
      }
    }
    let dots = 0;
    let k = j;
    while (k < s.length && (isDigit(s.charCodeAt(k)) || s.charCodeAt(k) === 46)) {
      if (s.charCodeAt(k) === 46) dots++;
      k++;
    }
    const start = Math.max(0, i - 5);
    if (dots === 3 && k > j + 6) {
      out.push({ id: '931100', pl: 1, at: start });
      return;
    }
    if (pl >= 2) {
      let e = j;
      while (e < s.length && e < j + 256 && s.charCodeAt(e) !== 32) e++;
      if (s.charCodeAt(e - 1) === 63 && e - 1 > j) {
        out.push({ id: '931120', pl: 2, at: start });
        return;
      }
    }
  }
}

/** Unix commands an injection runs; after a shell separator any of these is an attack. */
const UNIX_CMDS = new Set(
  (
    'cat tac nl ls dir id whoami uname wget curl nc ncat netcat bash sh zsh dash ksh csh tcsh busybox python ' +
    'python2 python3 perl ruby php lua node nodejs java socat telnet ssh scp ftp tftp rm mv cp chmod chown chgrp ' +
    'touch sleep ping nslookup dig host ifconfig ip ps kill killall pkill awk gawk sed grep egrep find xargs base64 ' +
    'xxd od hexdump strings sudo su env printenv passwd useradd usermod crontab nohup tar gzip gunzip zip unzip gcc ' +
    'cc make mkfifo openssl dd hostname pwd w who last netstat ss lsof systemctl service mount history export ' +
    'eval exec echo printf head tail more less sort uniq cut tr tee wc file stat which whereis locate alias ' +
    'powershell pwsh cmd certutil bitsadmin reg net type wmic rundll32 regsvr32 mshta cscript wscript ' +
    'systeminfo tasklist taskkill ipconfig ver set start shutdown reboot halt init nmap masscan'
  ).split(' '),
);
/** Of UNIX_CMDS, those that are also English words: an attack only with arguments a command takes, or alone. */
const WORDY = new Set(
  'id dir type set start more less sort cut file which last who w host find head tail make kill touch sleep env ip echo printf history mount service net ver time tee stat alias exec eval export init halt cmd'.split(
    ' ',
  ),
);

/** Strips the quoting shells ignore inside a word: `c'a't`, `c"a"t`, `c\at`, `ca$@t`, `$'x'`. */
function shellWord(s: string, i: number): { word: string; end: number } {
  let w = '';
  let j = i;
  const n = s.length;
  while (j < n && w.length < 32) {
    const c = s.charCodeAt(j);
    if (c === 39 || c === 34 || c === 92 || c === 94 /* ^ (cmd.exe) */) {
      j++;
      continue;
    }
    if (c === 36 && (s.charCodeAt(j + 1) === 64 || s.charCodeAt(j + 1) === 42)) {
      j += 2; // $@ $*
      continue;
    }
    if (isAlnum(c) || c === 45 || c === 46) {
      w += s[j];
      j++;
      continue;
    }
    break;
  }
  return { word: w, end: j };
}

/** The command word after a separator at `i` (spaces, `{`, `(`, a path prefix, env assignments skipped). */
function commandAt(s: string, i: number): { cmd: string; end: number } {
  const n = s.length;
  let j = i;
  for (let guard = 0; guard < 8; guard++) {
    while (j < n && (s.charCodeAt(j) === 32 || s.charCodeAt(j) === 123 || s.charCodeAt(j) === 40)) j++;
    // `${IFS}` and `$IFS$9` stand for spaces
    if (s.startsWith('${ifs}', j)) {
      j += 6;
      continue;
    }
    if (s.startsWith('$ifs', j)) {
      j += 4;
      if (s.charCodeAt(j) === 36 && isDigit(s.charCodeAt(j + 1))) j += 2;
      continue;
    }
    break;
  }
  // a path prefix: /bin/, /usr/bin/, /???/ … the last segment is the command
  if (s.charCodeAt(j) === 47 || (s.charCodeAt(j) === 46 && s.charCodeAt(j + 1) === 47)) {
    let k = j;
    let last = j;
    while (k < n && k - j < 64) {
      const c = s.charCodeAt(k);
      if (c === 47) last = k + 1;
      else if (!(isAlnum(c) || c === 46 || c === 63 || c === 42 || c === 45 || c === 39 || c === 34 || c === 92)) break;
      k++;
    }
    j = last;
  }
  const w = shellWord(s, j);
  return { cmd: w.word, end: w.end };
}

/** After a command word: does an argument follow that only a command takes (`-x`, a path, `$`, a redirect), or the end? */
function argShaped(s: string, end: number): boolean {
  let j = end;
  while (s.charCodeAt(j) === 32) j++;
  if (j >= s.length) return true;
  const c = s.charCodeAt(j);
  return (
    c === 45 ||
    c === 47 ||
    c === 36 ||
    c === 62 ||
    c === 60 ||
    c === 124 ||
    c === 59 ||
    c === 38 ||
    c === 96 ||
    c === 92 ||
    c === 41 ||
    c === 125 ||
    c === 46 ||
    c === 39 ||
    c === 34
  );
}

/** Whether a shell glob path such as `/???/c?t` or `/b??/*` is at `i`. */
function globPath(s: string, i: number): boolean {
  let q = 0;
  let j = i;
  while (j < s.length && j - i < 40) {
    const c = s.charCodeAt(j);
    if (c === 63 || c === 42) q++;
    else if (!(c === 47 || isAlnum(c))) break;
    j++;
  }
  return q >= 2;
}

/** Command injection (932), PHP (933), Node.js and template (934), Java (944) findings in a folded value. */
export function detectRce(s: string, pl: number, out: Finding[]): void {
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    let sep = 0;
    // ; | || & && ` $( newline (folded to space, so the caller passes raw newlines as `;` … see normalise) <( >(
    if (c === 59 || c === 124 || c === 38 || c === 10) sep = 1;
    else if (c === 96) {
      // A backtick substitutes a command where a shell reads it: at the start, attached to a word or after shell
      // punctuation; a Markdown code span (`` then `ls -la` ``, after a space) is not one below paranoia 2.
      const p = i === 0 ? 0 : s.charCodeAt(i - 1);
      // a run of backticks is a Markdown code fence, not a substitution
      if (s.charCodeAt(i + 1) === 96 || p === 96) continue;
      if (pl >= 2 || i === 0 || p !== 32) sep = 1;
    } else if ((c === 36 || c === 60 || c === 62) && s.charCodeAt(i + 1) === 40) sep = 2;
    if (sep === 0) {
      if (c === 47 && globPath(s, i) && (i === 0 || !isAlnum(s.charCodeAt(i - 1)))) {
        out.push({ id: '932190', pl: 1, at: i });
        return;
      }
      continue;
    }
    let j = i + sep;
    if (s.charCodeAt(j) === c) j++; // || &&
    const { cmd, end } = commandAt(s, j);
    if (cmd === '' || !UNIX_CMDS.has(cmd)) continue;
    if (WORDY.has(cmd) && c !== 96 && sep !== 2 && !argShaped(s, end)) continue;
    // `&` inside prose ("Tom & Jerry") rarely precedes a command with a command's arguments; `;` in prose ("; more")
    // is caught only with arguments shaped like a command's (WORDY above).
    out.push({ id: c === 96 || c === 36 ? '932105' : '932100', pl: 1, at: i });
    return;
  }
  // The value is a command line by itself: a shell path, `cmd /c`, powershell flags.
  const shells = [
    '/bin/sh',
    '/bin/bash',
    '/bin/zsh',
    '/bin/dash',
    '/usr/bin/env',
    '/bin/busybox',
    'cmd.exe',
    'cmd /c',
    'cmd /k',
    'powershell -',
    'powershell.exe',
    'pwsh -',
    '%comspec%',
    'bash -i',
    'bash -c',
    'sh -c',
    'sh -i',
    'nc -e',
    'ncat -e',
    '/dev/tcp/',
    '/dev/udp/',
  ];
  for (const sh of shells) {
    const i = s.indexOf(sh);
    if (i >= 0) {
      out.push({ id: '932160', pl: 1, at: i });
      return;
    }
  }
  if (s.indexOf('${ifs') >= 0 || s.indexOf('$ifs$') >= 0) {
    out.push({ id: '932230', pl: 1, at: s.indexOf('$') });
    return;
  }
  // Shellshock: a function definition in a header or parameter
  const ss = s.indexOf('() {');
  if (ss >= 0 && (ss === 0 || s.charCodeAt(ss - 1) === 32) && s.indexOf(';', ss) > 0) {
    out.push({ id: '932170', pl: 1, at: ss });
    return;
  }
  // A whole value that is a command with arguments (`cat /etc/passwd` is also LFI; `wget http://…`).
  const first = commandAt(s, 0);
  if (
    pl >= 2 &&
    first.cmd !== '' &&
    UNIX_CMDS.has(first.cmd) &&
    !WORDY.has(first.cmd) &&
    first.end < n &&
    argShaped(s, first.end)
  ) {
    out.push({ id: '932120', pl: 2, at: 0 });
    return;
  }
  detectPhp(s, pl, out);
  detectJava(s, pl, out);
  detectNode(s, pl, out);
}

const PHP_FUNCS = [
  'system',
  'exec',
  'shell_exec',
  'passthru',
  'popen',
  'proc_open',
  'pcntl_exec',
  'eval',
  'assert',
  'base64_decode',
  'gzinflate',
  'str_rot13',
  'phpinfo',
  'file_get_contents',
  'file_put_contents',
  'fopen',
  'fwrite',
  'readfile',
  'include',
  'include_once',
  'require',
  'require_once',
  'create_function',
  'call_user_func',
  'call_user_func_array',
  'preg_replace',
  'unserialize',
  'move_uploaded_file',
  'show_source',
  'highlight_file',
  'posix_getpwuid',
];
const PHP_FUNC_SET = new Set(PHP_FUNCS);
const PHP_HARD = new Set([
  'shell_exec',
  'passthru',
  'proc_open',
  'pcntl_exec',
  'phpinfo',
  'create_function',
  'base64_decode',
  'gzinflate',
  'str_rot13',
  'file_put_contents',
  'move_uploaded_file',
  'show_source',
  'highlight_file',
  'posix_getpwuid',
  'call_user_func_array',
]);

function detectPhp(s: string, pl: number, out: Finding[]): void {
  const open = s.indexOf('<?');
  if (open >= 0 && (s.startsWith('php', open + 2) || s.startsWith('=', open + 2) || s.startsWith(' ', open + 2))) {
    out.push({ id: '933100', pl: 1, at: open });
    return;
  }
  for (const v of [
    '$_get',
    '$_post',
    '$_request',
    '$_server',
    '$_cookie',
    '$_files',
    '$_env',
    '$globals',
    '$_session',
  ]) {
    const i = s.indexOf(v);
    if (i >= 0) {
      out.push({ id: '933130', pl: 1, at: i });
      return;
    }
  }
  // serialized PHP objects: O:8:"stdClass":1:{…}
  for (let i = s.indexOf('o:'); i >= 0; i = s.indexOf('o:', i + 2)) {
    let j = i + 2;
    while (isDigit(s.charCodeAt(j))) j++;
    if (j > i + 2 && s.startsWith(':"', j) && (i === 0 || !isAlnum(s.charCodeAt(i - 1)))) {
      out.push({ id: '933170', pl: 1, at: i });
      return;
    }
  }
  if (s.indexOf('(') < 0) return;
  const lastSemi = s.lastIndexOf(';');
  const hasDollar = s.indexOf('$') >= 0;
  // Each `(`: the name before it (spaces and quotes between skipped: `system ("id")`, `'exec'(…)`).
  for (let paren = s.indexOf('('); paren >= 0; paren = s.indexOf('(', paren + 1)) {
    let e = paren - 1;
    while (e >= 0 && (s.charCodeAt(e) === 32 || s.charCodeAt(e) === 34 || s.charCodeAt(e) === 39)) e--;
    let i = e;
    while (i >= 0 && isAlnum(s.charCodeAt(i)) && e - i < 24) i--;
    const f = s.slice(i + 1, e + 1);
    if (!PHP_FUNC_SET.has(f)) continue;
    i++;
    if (i > 0 && (isAlnum(s.charCodeAt(i - 1)) || s.charCodeAt(i - 1) === 46 || s.charCodeAt(i - 1) === 36)) continue;
    {
      let j = paren + 1;
      while (s.charCodeAt(j) === 32) j++;
      const a = s.charCodeAt(j);
      // an argument an attacker passes: a string, a variable, a nested call, a backtick; `()` for phpinfo.
      const hard = PHP_HARD.has(f);
      if (a === 39 || a === 34 || a === 36 || a === 96 || (hard && (a === 41 || isAlnum(a)))) {
        // system("id"), exec('ls -la'): the argument is a shell command
        const cmd = a === 39 || a === 34 || a === 96 ? shellWord(s, j + 1).word : '';
        if (hard || pl >= 2 || lastSemi > j || hasDollar || UNIX_CMDS.has(cmd)) {
          out.push({ id: hard ? '933150' : '933160', pl: 1, at: i });
          return;
        }
      }
    }
  }
}

/** `${jndi:…}` with the nested lookups that hide it (`${${lower:j}ndi:`, `${::-j}`), and Java class abuse. */
function detectJava(s: string, pl: number, out: Finding[]): void {
  const d = s.indexOf('${');
  if (d >= 0) {
    const flat = flattenLookups(s.slice(d, d + 512));
    const i = flat.indexOf('${jndi:');
    if (i >= 0 || flat.indexOf('jndi:ldap') >= 0 || flat.indexOf('jndi:rmi') >= 0 || flat.indexOf('jndi:dns') >= 0) {
      out.push({ id: '944150', pl: 1, at: d });
      return;
    }
  }
  for (const v of [
    'java.lang.runtime',
    'java.lang.processbuilder',
    'getruntime().exec',
    'class.module.classloader',
    'classloader.resources',
    'javax.script.scriptenginemanager',
    'java.lang.reflect',
    '.getclass().forname',
    'org.apache.commons.collections',
    'ysoserial',
    'rO0ABX'.toLowerCase(),
    'aced0005',
  ]) {
    const i = s.indexOf(v);
    if (i >= 0) {
      out.push({ id: '944100', pl: 1, at: i });
      return;
    }
  }
  // OGNL and Spring expression injection: %{…} / #{…} with a class reference or method call
  for (const m of ['%{', '#{', '${']) {
    const i = s.indexOf(m);
    if (i < 0) continue;
    const body = s.slice(i, i + 200);
    if (
      body.indexOf('#_memberaccess') >= 0 ||
      body.indexOf('@java.') >= 0 ||
      body.indexOf('t(java.') >= 0 ||
      body.indexOf('.exec(') >= 0 ||
      body.indexOf('#context') >= 0
    ) {
      out.push({ id: '944110', pl: 1, at: i });
      return;
    }
  }
  void pl;
}

/** `${lower:j}` → `j`, `${::-j}` → `j`, `${env:X:-j}` → `j`: the lookups Log4j resolves, resolved innermost first. */
function flattenLookups(s: string): string {
  let out = s;
  for (let pass = 0; pass < 8; pass++) {
    let changed = false;
    let r = '';
    let i = 0;
    while (i < out.length) {
      if (out.startsWith('${', i)) {
        const close = out.indexOf('}', i + 2);
        const inner = close > 0 ? out.slice(i + 2, close) : '';
        if (close > 0 && inner.indexOf('${') < 0) {
          const dash = inner.indexOf(':-');
          const colon = inner.indexOf(':');
          if (dash >= 0) {
            r += inner.slice(dash + 2);
            i = close + 1;
            changed = true;
            continue;
          }
          if (colon > 0 && (inner.startsWith('lower:') || inner.startsWith('upper:'))) {
            r += inner.slice(colon + 1);
            i = close + 1;
            changed = true;
            continue;
          }
        }
      }
      r += out[i++];
    }
    out = r;
    if (!changed) break;
  }
  return out;
}

/** Node.js code injection, prototype pollution and server-side template probes (934). */
function detectNode(s: string, pl: number, out: Finding[]): void {
  if (
    s.indexOf('process') < 0 &&
    s.indexOf('require') < 0 &&
    s.indexOf('constructor') < 0 &&
    s.indexOf('__') < 0 &&
    s.indexOf('{') < 0 &&
    s.indexOf('<%') < 0
  )
    return;
  for (const v of [
    "require('child_process')",
    'require("child_process")',
    'child_process',
    'process.mainmodule',
    'process.binding(',
    'global.process',
    "require('fs')",
    '.constructor.constructor(',
    'this.constructor.constructor',
  ]) {
    const i = s.indexOf(v);
    if (i >= 0) {
      out.push({ id: '934100', pl: 1, at: i });
      return;
    }
  }
  const proto = s.indexOf('__proto__');
  if (proto >= 0) {
    out.push({ id: '934130', pl: 1, at: proto });
    return;
  }
  const cp =
    s.indexOf('constructor.prototype') >= 0 ? s.indexOf('constructor.prototype') : s.indexOf('constructor[prototype]');
  if (cp >= 0) {
    out.push({ id: '934130', pl: 1, at: cp });
    return;
  }
  // SSTI: {{ … }} or ${ … } or <%= … %> whose content reaches objects or runs arithmetic probes
  for (const m of ['{{', '{%', '<%=', '#{', '${']) {
    const i = s.indexOf(m);
    if (i < 0) continue;
    const body = s.slice(i, i + 200);
    if (
      body.indexOf('__class__') >= 0 ||
      body.indexOf('__globals__') >= 0 ||
      body.indexOf('__subclasses__') >= 0 ||
      body.indexOf('__builtins__') >= 0 ||
      body.indexOf('__import__') >= 0 ||
      body.indexOf('config.items') >= 0 ||
      body.indexOf('self._templatereference') >= 0 ||
      body.indexOf('lipsum.') >= 0 ||
      body.indexOf('cycler.') >= 0 ||
      body.indexOf('request.application') >= 0 ||
      body.indexOf('.popen(') >= 0 ||
      body.indexOf('getruntime') >= 0
    ) {
      out.push({ id: '934150', pl: 1, at: i });
      return;
    }
    if (pl >= 2) {
      // an arithmetic probe: {{7*7}}, ${7*7}, <%= 7*7 %>
      let j = i + m.length;
      while (s.charCodeAt(j) === 32) j++;
      let k = j;
      while (isDigit(s.charCodeAt(k))) k++;
      if (k > j && (s.charCodeAt(k) === 42 || s.charCodeAt(k) === 43) && isDigit(s.charCodeAt(k + 1))) {
        out.push({ id: '934160', pl: 2, at: i });
        return;
      }
    }
  }
}
