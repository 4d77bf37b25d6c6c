// A native HTTP/1.1 front for measuring (issue 12's ceiling row, not the edge's serving path): accepts connections
// and parses request heads in C, hands JavaScript a BATCH of parsed requests per call, and writes the answers
// JavaScript leaves as pre-encoded bytes.
//
// One epoll instance of its own holds the listening socket and every connection (level-triggered); its descriptor is
// polled on Node's own loop (uv_poll_t), so a wake-up drains up to EVENTS ready sockets, reads and parses them, and
// calls JavaScript once per batch of requests (at most `batch`), not once per request.
//
// Shared memory, allocated by JavaScript and held here by reference for the listener's lifetime:
//   rx    per request of the batch, packed: the Host value, the request target right after it (so host + target is
//         one span, a cache key), then the whole head as received (request line, fields, blank line)
//   meta  Int32Array, META_FIELDS per request (M_*): filled here, except the answer's place (M_TX_OFF, M_TX_LEN)
//         filled by JavaScript: length > 0 answers with tx[off, +len); 0 leaves the request waiting for respond();
//         -1 closes the connection
//   tx    answers, packed (JavaScript copies its pre-encoded bytes here)
//
// Bounds: a head is at most MAX_HEAD bytes and MAX_FIELDS lines (431 otherwise); answers a connection cannot take yet
// are kept up to MAX_PENDING bytes (the connection is closed beyond); connections at most `maxConnections` (more are
// closed at accept). One request per connection is with JavaScript at a time: bytes that follow it (pipelining)
// wait in the connection's buffer and are parsed once it is answered, so answers keep their order.
// Refused: request bodies (Content-Length above 0: 413, Transfer-Encoding: 501; the ceiling serves GETs), targets
// not in origin form (400, except OPTIONS *), versions other than HTTP/1.0 and 1.1 (505). Every refusal answers with
// `connection: close`; after a connection's last answer our side is shut and what the peer still sends is dropped
// until it closes (up to 1 MiB), so the close never turns into a reset that destroys the answer.
// Not here (a measuring tool): idle and header timeouts, TLS, request bodies, IPv6 peer addresses for JavaScript.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <node_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#define MAX_HEAD 8192
#define MAX_FIELDS 100
#define MAX_PENDING (256 * 1024)
#define EVENTS 256
/** epoll_wait rounds per wake-up before the loop gets a turn (timers, other sockets). */
#define ROUNDS_PER_WAKEUP 8
/** Rounds of pipelined requests answered in one go; the rest on the loop's next turn (uv_idle). */
#define PIPELINE_PASSES 8
#define LISTEN_TAG 0xffffffffu

enum {
  M_SLOT,
  M_GEN,
  M_FLAGS,
  M_PEER,
  M_METHOD_OFF,
  M_METHOD_LEN,
  M_HOST_OFF,
  M_HOST_LEN,
  M_TARGET_OFF,
  M_TARGET_LEN,
  M_PATH_LEN,
  M_HEAD_OFF,
  M_HEAD_LEN,
  M_UA_OFF,
  M_UA_LEN,
  M_AE_OFF,
  M_AE_LEN,
  M_COOKIE_OFF,
  M_COOKIE_LEN,
  M_TX_OFF,
  M_TX_LEN,
  META_FIELDS
};
enum { F_KEEP_ALIVE = 1, F_HTTP10 = 2, F_HEAD = 4, F_V6 = 8 };

typedef struct {
  int fd; // -1: free slot
  uint32_t gen;
  uint32_t peer;
  bool v6;
  uint8_t *rbuf; // MAX_HEAD bytes
  uint32_t rlen, scanned;
  uint8_t *wbuf; // answer bytes not taken by the socket yet
  uint32_t wlen, woff, wcap;
  bool waiting;     // a request is with JavaScript
  bool close_after; // close once the answer is written
  bool eof;         // the peer shut its side
  bool queued;      // on the ready list
  bool linger;      // refused or done: our side shut, reading and dropping until the peer closes
  uint32_t dropped; // bytes dropped while lingering
  uint32_t events;  // registered with epoll
} conn_t;

typedef struct {
  napi_env env;
  int lfd, epfd;
  bool closing;
  uv_poll_t poll;
  uv_idle_t idle;
  bool idling;
  conn_t *conns;
  uint32_t max_conns;
  uint32_t *free_slots, nfree;
  uint32_t *ready, *ready_b, nready;
  uint32_t batch, n;
  uint8_t *rx, *tx;
  size_t rx_len, tx_len, rx_at;
  int32_t *meta;
  int in_dispatch;
  napi_ref cb, rx_ref, meta_ref, tx_ref;
  napi_async_context actx;
} front_t;

typedef struct {
  uint32_t method_off, method_len, target_off, target_len, path_len, host_off, host_len;
  uint32_t ua_off, ua_len, ae_off, ae_len, cookie_off, cookie_len;
  int flags;
} head_t;

static void on_poll(uv_poll_t *h, int status, int events);
static void on_idle(uv_idle_t *h);

// ---- connections ------------------------------------------------------------------------------------------------

static uint64_t tag(const front_t *s, const conn_t *c) {
  return ((uint64_t)c->gen << 32) | (uint32_t)(c - s->conns);
}

static void set_events(front_t *s, conn_t *c) {
  uint32_t want = 0;
  if (c->linger || (!c->eof && !c->close_after && c->rlen < MAX_HEAD)) want |= EPOLLIN;
  if (c->wlen > c->woff) want |= EPOLLOUT;
  if (want == c->events) return;
  struct epoll_event ev = {.events = want, .data.u64 = tag(s, c)};
  epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
  c->events = want;
}

static void conn_close(front_t *s, conn_t *c) {
  if (c->fd < 0) return;
  close(c->fd); // leaves the epoll set with it (never duplicated)
  c->fd = -1;
  c->gen++;
  c->rlen = c->scanned = 0;
  c->wlen = c->woff = 0;
  if (c->wcap > 64 * 1024) { // a large pending buffer is not kept for the slot's next connection
    free(c->wbuf);
    c->wbuf = NULL;
    c->wcap = 0;
  }
  c->waiting = c->close_after = c->eof = c->linger = false;
  c->dropped = 0;
  s->free_slots[s->nfree++] = (uint32_t)(c - s->conns);
}

/**
 * The connection's last answer is written: our side is shut (FIN after the answer) and what the peer still sends is
 * read and dropped until it closes, so that unread bytes never turn the close into a reset that could destroy the
 * answer before the peer reads it.
 */
static void conn_finish(front_t *s, conn_t *c) {
  if (c->eof) {
    conn_close(s, c);
    return;
  }
  c->linger = true;
  c->rlen = 0;
  shutdown(c->fd, SHUT_WR);
  set_events(s, c);
}

/** Writes what is pending; closes the connection when it fails or when it is done and meant to close. */
static void conn_flush(front_t *s, conn_t *c) {
  while (c->woff < c->wlen) {
    ssize_t r = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);
    if (r > 0) {
      c->woff += (uint32_t)r;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      set_events(s, c);
      return;
    }
    conn_close(s, c);
    return;
  }
  c->wlen = c->woff = 0;
  if (c->close_after && !c->waiting) {
    conn_finish(s, c);
    return;
  }
  set_events(s, c);
}

/** Sends bytes (straight to the socket when nothing is pending); false when the connection was closed. */
static bool conn_send(front_t *s, conn_t *c, const uint8_t *p, size_t len) {
  if (c->wlen == c->woff) {
    c->wlen = c->woff = 0;
    while (len > 0) {
      ssize_t r = write(c->fd, p, len);
      if (r > 0) {
        p += r;
        len -= (size_t)r;
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      conn_close(s, c);
      return false;
    }
    if (len == 0) return true;
  }
  if (c->wlen + len > MAX_PENDING) {
    conn_close(s, c);
    return false;
  }
  if (c->wlen + len > c->wcap) {
    uint32_t cap = c->wcap ? c->wcap : 4096;
    while (cap < c->wlen + len) cap *= 2;
    uint8_t *b = realloc(c->wbuf, cap);
    if (!b) {
      conn_close(s, c);
      return false;
    }
    c->wbuf = b;
    c->wcap = cap;
  }
  memcpy(c->wbuf + c->wlen, p, len);
  c->wlen += (uint32_t)len;
  set_events(s, c);
  return true;
}

static void queue_ready(front_t *s, conn_t *c) {
  if (c->queued) return;
  c->queued = true;
  s->ready[s->nready++] = (uint32_t)(c - s->conns);
}

/** The request with JavaScript is answered: close if asked, else parse what followed it. */
static void conn_answered(front_t *s, conn_t *c, const uint8_t *p, size_t len) {
  c->waiting = false;
  if (!conn_send(s, c, p, len)) return;
  if (c->close_after) {
    if (c->wlen == c->woff) conn_finish(s, c);
    else set_events(s, c);
    return;
  }
  if (c->rlen > 0 || c->eof) queue_ready(s, c);
  set_events(s, c);
}

static void refuse(front_t *s, conn_t *c, int status) {
  const char *text;
  switch (status) {
  case 413: text = "HTTP/1.1 413 Content Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"; break;
  case 431: text = "HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"; break;
  case 501: text = "HTTP/1.1 501 Not Implemented\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"; break;
  case 505: text = "HTTP/1.1 505 HTTP Version Not Supported\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"; break;
  default: text = "HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n"; break;
  }
  c->close_after = true;
  c->rlen = 0;
  if (!conn_send(s, c, (const uint8_t *)text, strlen(text))) return;
  if (c->wlen == c->woff) conn_finish(s, c);
  else set_events(s, c);
}

// ---- parsing ----------------------------------------------------------------------------------------------------

static bool tchar(uint8_t ch) {
  // RFC 9110 §5.6.2 token characters
  static const char extra[] = "!#$%&'*+-.^_`|~";
  if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) return true;
  return ch != 0 && strchr(extra, ch) != NULL;
}

static bool name_is(const uint8_t *p, size_t n, const char *lower) {
  size_t k = strlen(lower);
  if (n != k) return false;
  for (size_t i = 0; i < n; i++)
    if ((p[i] | 0x20) != (uint8_t)lower[i]) return false;
  return true;
}

/** Whether a comma-separated Connection value holds the token (case-insensitive). */
static bool has_token(const uint8_t *p, size_t n, const char *token) {
  size_t i = 0;
  while (i < n) {
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == ',')) i++;
    size_t start = i;
    while (i < n && p[i] != ',') i++;
    size_t end = i;
    while (end > start && (p[end - 1] == ' ' || p[end - 1] == '\t')) end--;
    if (name_is(p + start, end - start, token)) return true;
  }
  return false;
}

/**
 * Parses head p[0, n) (ending with CRLF CRLF; every LF was checked to follow a CR). Returns 0, or the status to
 * refuse with.
 */
static int parse_head(const uint8_t *p, size_t n, head_t *h) {
  memset(h, 0, sizeof *h);
  size_t i = 0;
  while (i < n && tchar(p[i])) i++;
  if (i == 0 || i > 32 || i >= n || p[i] != ' ') return 400;
  h->method_len = (uint32_t)i;
  size_t t = ++i;
  while (i < n && p[i] > 0x20 && p[i] != 0x7f) i++;
  if (i == t || i >= n || p[i] != ' ') return 400;
  h->target_off = (uint32_t)t;
  h->target_len = (uint32_t)(i - t);
  if (p[t] == '/') {
    const uint8_t *q = memchr(p + t, '?', h->target_len);
    h->path_len = q ? (uint32_t)(q - (p + t)) : h->target_len;
  } else if (h->target_len == 1 && p[t] == '*' && name_is(p, h->method_len, "options")) {
    h->path_len = 1;
  } else {
    return 400; // absolute or authority form: not served here
  }
  i++;
  if (n - i < 10 || memcmp(p + i, "HTTP/", 5) != 0) return 400;
  uint8_t major = p[i + 5], dot = p[i + 6], minor = p[i + 7];
  if (major < '0' || major > '9' || dot != '.' || minor < '0' || minor > '9' || p[i + 8] != '\r' || p[i + 9] != '\n')
    return 400;
  if (major != '1' || (minor != '0' && minor != '1')) return 505;
  bool http10 = minor == '0';
  i += 10; // "HTTP/1.x\r\n"
  bool has_host = false, conn_close = false, conn_keep = false, has_length = false;
  uint64_t length = 0;
  unsigned fields = 0;
  while (i < n) {
    if (p[i] == '\r') {
      if (i + 2 != n) return 400; // a bare CR, not the blank line
      break;
    }
    if (p[i] == ' ' || p[i] == '\t') return 400; // obs-fold
    if (++fields > MAX_FIELDS) return 431;
    size_t ns = i;
    while (i < n && tchar(p[i])) i++;
    if (i == ns || i >= n || p[i] != ':') return 400; // no name, or whitespace before the colon
    size_t nl = i - ns;
    i++;
    while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
    size_t vs = i;
    while (i < n && p[i] != '\r') {
      uint8_t ch = p[i];
      if ((ch < 0x20 && ch != '\t') || ch == 0x7f) return 400;
      i++;
    }
    if (i + 1 >= n || p[i + 1] != '\n') return 400;
    size_t ve = i;
    while (ve > vs && (p[ve - 1] == ' ' || p[ve - 1] == '\t')) ve--;
    const uint8_t *name = p + ns, *v = p + vs;
    size_t vl = ve - vs;
    uint8_t c0 = name[0] | 0x20;
    if (c0 == 'h' && name_is(name, nl, "host")) {
      if (has_host) return 400;
      has_host = true;
      h->host_off = (uint32_t)vs;
      h->host_len = (uint32_t)vl;
    } else if (c0 == 'c' && name_is(name, nl, "content-length")) {
      if (vl == 0 || vl > 15) return 400;
      uint64_t value = 0;
      for (size_t k = 0; k < vl; k++) {
        if (v[k] < '0' || v[k] > '9') return 400;
        value = value * 10 + (v[k] - '0');
      }
      if (has_length && value != length) return 400;
      has_length = true;
      length = value;
    } else if (c0 == 't' && name_is(name, nl, "transfer-encoding")) {
      return http10 ? 400 : 501;
    } else if (c0 == 'c' && name_is(name, nl, "connection")) {
      if (has_token(v, vl, "close")) conn_close = true;
      if (has_token(v, vl, "keep-alive")) conn_keep = true;
    } else if (c0 == 'u' && name_is(name, nl, "user-agent")) {
      h->ua_off = (uint32_t)vs;
      h->ua_len = (uint32_t)vl;
    } else if (c0 == 'a' && name_is(name, nl, "accept-encoding")) {
      h->ae_off = (uint32_t)vs;
      h->ae_len = (uint32_t)vl;
    } else if (c0 == 'c' && name_is(name, nl, "cookie") && h->cookie_len == 0) {
      h->cookie_off = (uint32_t)vs;
      h->cookie_len = (uint32_t)vl;
    }
    i += 2;
  }
  if (!http10 && !has_host) return 400; // RFC 9112 §3.2
  if (length > 0) return 413;
  bool keep = http10 ? (conn_keep && !conn_close) : !conn_close;
  h->flags = (keep ? F_KEEP_ALIVE : 0) | (http10 ? F_HTTP10 : 0) |
             (h->method_len == 4 && memcmp(p, "HEAD", 4) == 0 ? F_HEAD : 0);
  return 0;
}

/**
 * Finds the end of the head in the connection's buffer: its length with the blank line, 0 when not complete yet, or
 * -1 on a bare LF. Searches only what was not searched before.
 */
static long head_end(conn_t *c) {
  // leading empty lines before a request line are ignored (RFC 9112 §2.2)
  while (c->rlen >= 2 && c->rbuf[0] == '\r' && c->rbuf[1] == '\n') {
    memmove(c->rbuf, c->rbuf + 2, c->rlen - 2);
    c->rlen -= 2;
    c->scanned = 0;
  }
  size_t k = c->scanned;
  while (k < c->rlen) {
    uint8_t *lf = memchr(c->rbuf + k, '\n', c->rlen - k);
    if (!lf) break;
    size_t at = (size_t)(lf - c->rbuf);
    if (at == 0 || c->rbuf[at - 1] != '\r') return -1;
    if (at >= 3 && c->rbuf[at - 2] == '\n' && c->rbuf[at - 3] == '\r') return (long)(at + 1);
    k = at + 1;
  }
  c->scanned = c->rlen;
  return 0;
}

static void dispatch(front_t *s);

/** Parses the connection's next request into the batch, if it is free to take one. */
static void take(front_t *s, conn_t *c) {
  if (c->fd < 0 || c->waiting || c->close_after || c->wlen > c->woff) return;
  long end = head_end(c);
  if (end < 0) {
    refuse(s, c, 400);
    return;
  }
  if (end == 0) {
    if (c->rlen >= MAX_HEAD) refuse(s, c, 431);
    else if (c->eof) conn_close(s, c);
    return;
  }
  head_t h;
  int status = parse_head(c->rbuf, (size_t)end, &h);
  if (status != 0) {
    refuse(s, c, status);
    return;
  }
  size_t need = h.host_len + h.target_len + (size_t)end;
  if (s->n == s->batch || s->rx_at + need > s->rx_len) dispatch(s);
  if (c->fd < 0 || s->closing) return;
  uint8_t *rx = s->rx + s->rx_at;
  int32_t *m = s->meta + (size_t)s->n * META_FIELDS;
  uint32_t base = (uint32_t)s->rx_at;
  memcpy(rx, c->rbuf + h.host_off, h.host_len);
  memcpy(rx + h.host_len, c->rbuf + h.target_off, h.target_len);
  uint32_t head_at = base + h.host_len + h.target_len;
  memcpy(rx + h.host_len + h.target_len, c->rbuf, (size_t)end);
  m[M_SLOT] = (int32_t)(c - s->conns);
  m[M_GEN] = (int32_t)c->gen;
  m[M_FLAGS] = h.flags | (c->v6 ? F_V6 : 0);
  m[M_PEER] = (int32_t)c->peer;
  m[M_METHOD_OFF] = (int32_t)head_at;
  m[M_METHOD_LEN] = (int32_t)h.method_len;
  m[M_HOST_OFF] = (int32_t)base;
  m[M_HOST_LEN] = (int32_t)h.host_len;
  m[M_TARGET_OFF] = (int32_t)(base + h.host_len);
  m[M_TARGET_LEN] = (int32_t)h.target_len;
  m[M_PATH_LEN] = (int32_t)h.path_len;
  m[M_HEAD_OFF] = (int32_t)head_at;
  m[M_HEAD_LEN] = (int32_t)end;
  m[M_UA_OFF] = (int32_t)(head_at + h.ua_off);
  m[M_UA_LEN] = (int32_t)h.ua_len;
  m[M_AE_OFF] = (int32_t)(head_at + h.ae_off);
  m[M_AE_LEN] = (int32_t)h.ae_len;
  m[M_COOKIE_OFF] = (int32_t)(head_at + h.cookie_off);
  m[M_COOKIE_LEN] = (int32_t)h.cookie_len;
  m[M_TX_OFF] = 0;
  m[M_TX_LEN] = 0;
  s->rx_at += need;
  s->n++;
  c->waiting = true;
  if (!(h.flags & F_KEEP_ALIVE)) c->close_after = true;
  c->rlen -= (uint32_t)end;
  if (c->rlen > 0) memmove(c->rbuf, c->rbuf + end, c->rlen);
  c->scanned = 0;
  if (c->close_after) set_events(s, c);
}

static void conn_read(front_t *s, conn_t *c) {
  if (c->linger) {
    for (;;) {
      ssize_t r = read(c->fd, c->rbuf, MAX_HEAD);
      if (r > 0 && (c->dropped += (uint32_t)r) <= 1024 * 1024) continue;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      conn_close(s, c); // the peer closed (or sent more than a refusal is worth waiting for)
      return;
    }
  }
  while (c->rlen < MAX_HEAD) {
    size_t room = MAX_HEAD - c->rlen;
    ssize_t r = read(c->fd, c->rbuf + c->rlen, room);
    if (r > 0) {
      c->rlen += (uint32_t)r;
      if ((size_t)r < room) break; // short read: drained
      continue;
    }
    if (r == 0) {
      c->eof = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    conn_close(s, c);
    return;
  }
  if (c->waiting) {
    if (c->eof) {
      // the client went away with its request still with JavaScript: the answer has nowhere to go
      conn_close(s, c);
      return;
    }
    set_events(s, c); // a full buffer stops reading until the request is answered
    return;
  }
  take(s, c);
  if (c->fd >= 0 && !c->waiting) set_events(s, c);
}

static void conn_accept(front_t *s) {
  for (int k = 0; k < 64; k++) {
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    int fd = accept4(s->lfd, (struct sockaddr *)&a, &alen, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return; // EAGAIN, or out of descriptors (the listener stays readable: tried again next turn)
    }
    if (s->nfree == 0) {
      close(fd);
      continue;
    }
    conn_t *c = &s->conns[s->free_slots[--s->nfree]];
    if (!c->rbuf && !(c->rbuf = malloc(MAX_HEAD))) {
      s->nfree++;
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->fd = fd;
    c->v6 = a.ss_family == AF_INET6;
    c->peer = a.ss_family == AF_INET ? ntohl(((struct sockaddr_in *)&a)->sin_addr.s_addr) : 0;
    c->events = EPOLLIN;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag(s, c)};
    if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) conn_close(s, c);
  }
}

// ---- JavaScript -------------------------------------------------------------------------------------------------

static void call_handler(front_t *s, unsigned n) {
  napi_env env = s->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value cb, recv, arg, result;
  if (napi_get_reference_value(env, s->cb, &cb) == napi_ok && napi_get_global(env, &recv) == napi_ok &&
      napi_create_uint32(env, n, &arg) == napi_ok) {
    if (napi_make_callback(env, s->actx, recv, cb, 1, &arg, &result) != napi_ok) {
      bool pending = false;
      napi_is_exception_pending(env, &pending);
      if (pending) {
        napi_value err;
        napi_get_and_clear_last_exception(env, &err);
        napi_fatal_exception(env, err);
      }
    }
  }
  napi_close_handle_scope(env, scope);
}

static void release(front_t *s);

/** Hands the batch to JavaScript, then writes its answers. */
static void dispatch(front_t *s) {
  unsigned n = s->n;
  if (n == 0 || s->closing) return;
  s->in_dispatch++;
  call_handler(s, n);
  s->in_dispatch--;
  if (s->closing) {
    if (s->in_dispatch == 0) release(s);
    return;
  }
  for (unsigned i = 0; i < n; i++) {
    int32_t *m = s->meta + (size_t)i * META_FIELDS;
    uint32_t slot = (uint32_t)m[M_SLOT];
    if (slot >= s->max_conns) continue;
    conn_t *c = &s->conns[slot];
    if (c->fd < 0 || c->gen != (uint32_t)m[M_GEN] || !c->waiting) continue; // gone, or answered by respond()
    int32_t off = m[M_TX_OFF], len = m[M_TX_LEN];
    if (len < 0) conn_close(s, c);
    else if (len > 0 && off >= 0 && (size_t)off + (size_t)len <= s->tx_len) conn_answered(s, c, s->tx + off, (size_t)len);
  }
  s->n = 0;
  s->rx_at = 0;
}

/** Parses the connections whose request was answered and that hold more bytes (pipelining), a few rounds. */
static void pump(front_t *s) {
  for (int pass = 0; pass < PIPELINE_PASSES && s->nready > 0 && !s->closing; pass++) {
    // the list taken now; take may dispatch, and what that queues goes to the other list, for the next pass
    uint32_t k = s->nready, *list = s->ready;
    s->ready = s->ready_b;
    s->ready_b = list;
    s->nready = 0;
    for (uint32_t i = 0; i < k; i++) {
      conn_t *c = &s->conns[list[i]];
      c->queued = false;
      take(s, c);
      if (s->closing) break;
      if (c->fd >= 0 && !c->waiting) set_events(s, c);
    }
    if (s->closing) return;
    dispatch(s);
    if (s->closing) return;
  }
  if (s->nready > 0 && !s->idling) {
    s->idling = true;
    uv_idle_start(&s->idle, on_idle);
  } else if (s->nready == 0 && s->idling) {
    s->idling = false;
    uv_idle_stop(&s->idle);
  }
}

static void on_idle(uv_idle_t *h) {
  front_t *s = h->data;
  if (s->closing) return;
  pump(s);
}

static void on_poll(uv_poll_t *h, int status, int events) {
  front_t *s = h->data;
  if (s->closing) return;
  struct epoll_event evs[EVENTS];
  for (int round = 0; round < ROUNDS_PER_WAKEUP; round++) {
    int n = epoll_wait(s->epfd, evs, EVENTS, 0);
    if (n <= 0) break;
    for (int i = 0; i < n && !s->closing; i++) {
      uint32_t slot = (uint32_t)evs[i].data.u64;
      if (slot == LISTEN_TAG) {
        conn_accept(s);
        continue;
      }
      conn_t *c = &s->conns[slot];
      if (c->fd < 0 || c->gen != (uint32_t)(evs[i].data.u64 >> 32)) continue; // closed during this wake-up
      uint32_t e = evs[i].events;
      if (e & EPOLLERR) {
        conn_close(s, c);
        continue;
      }
      if (e & EPOLLOUT) {
        conn_flush(s, c);
        if (c->fd < 0) continue;
        if (!c->waiting && c->wlen == c->woff && c->rlen > 0) queue_ready(s, c);
      }
      if (e & (EPOLLIN | EPOLLHUP)) conn_read(s, c);
    }
    if (s->closing) return;
    dispatch(s);
    if (s->closing) return;
    pump(s);
    if (s->closing) return;
    if (n < EVENTS) break;
  }
}

// ---- lifetime ---------------------------------------------------------------------------------------------------

static void release(front_t *s) {
  napi_env env = s->env;
  napi_ref refs[] = {s->cb, s->rx_ref, s->meta_ref, s->tx_ref};
  for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
    if (refs[i]) napi_delete_reference(env, refs[i]);
  if (s->actx) napi_async_destroy(env, s->actx);
  s->cb = s->rx_ref = s->meta_ref = s->tx_ref = NULL;
  s->actx = NULL;
}

static void free_front(front_t *s) {
  if (s->conns) {
    for (uint32_t i = 0; i < s->max_conns; i++) {
      if (s->conns[i].fd >= 0) close(s->conns[i].fd);
      free(s->conns[i].rbuf);
      free(s->conns[i].wbuf);
    }
  }
  free(s->conns);
  free(s->free_slots);
  free(s->ready);
  free(s->ready_b);
  free(s);
}

static void on_idle_closed(uv_handle_t *h) {
  front_t *s = h->data;
  free_front(s);
}

static void on_poll_closed(uv_handle_t *h) {
  front_t *s = h->data;
  if (s->epfd >= 0) close(s->epfd);
  if (s->lfd >= 0) close(s->lfd);
  uv_close((uv_handle_t *)&s->idle, on_idle_closed);
}

static void cleanup_hook(void *arg);

static void close_front(front_t *s, bool teardown) {
  if (s->closing) return;
  s->closing = true;
  if (!teardown) napi_remove_env_cleanup_hook(s->env, cleanup_hook, s);
  if (!teardown && s->in_dispatch == 0) release(s);
  uv_idle_stop(&s->idle);
  uv_poll_stop(&s->poll);
  uv_close((uv_handle_t *)&s->poll, on_poll_closed);
}

/** The environment is being torn down while the listener is open (its references go with it). */
static void cleanup_hook(void *arg) { close_front(arg, true); }

#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    if ((call) != napi_ok) goto fail;                                                                                  \
  } while (0)

static napi_value get_prop(napi_env env, napi_value obj, const char *name) {
  napi_value v = NULL;
  napi_get_named_property(env, obj, name, &v);
  return v;
}

static uint32_t get_u32(napi_env env, napi_value obj, const char *name) {
  uint32_t n = 0;
  napi_get_value_uint32(env, get_prop(env, obj, name), &n);
  return n;
}

static bool get_bytes(napi_env env, napi_value v, void **data, size_t *len) {
  bool is = false;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return false;
  napi_typedarray_type t;
  size_t length, offset;
  napi_value ab;
  if (napi_get_typedarray_info(env, v, &t, &length, data, &ab, &offset) != napi_ok) return false;
  *len = length * (t == napi_int32_array || t == napi_uint32_array ? 4 : 1);
  return true;
}

static void throw_errno(napi_env env, const char *what, int e) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(e));
  napi_throw_error(env, NULL, msg);
}

/**
 * listen({ host, port, reusePort, batch, maxConnections, rx, meta, tx }, onBatch) → { handle, port }.
 * onBatch(n) is called with n requests in rx/meta; it leaves each one's answer in tx and meta.
 */
static napi_value js_listen(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], result = NULL;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2) {
    napi_throw_type_error(env, NULL, "listen(options, onBatch)");
    return NULL;
  }
  napi_value o = argv[0];
  char host[64] = {0};
  size_t host_len;
  CHECK(napi_get_value_string_utf8(env, get_prop(env, o, "host"), host, sizeof host, &host_len));
  uint32_t port = get_u32(env, o, "port"), batch = get_u32(env, o, "batch"), max = get_u32(env, o, "maxConnections");
  bool reuse = false;
  napi_get_value_bool(env, get_prop(env, o, "reusePort"), &reuse);
  void *rx, *meta, *tx;
  size_t rx_len, meta_len, tx_len;
  napi_value rxv = get_prop(env, o, "rx"), metav = get_prop(env, o, "meta"), txv = get_prop(env, o, "tx");
  if (batch == 0 || batch > 4096 || max == 0 || max > 1000000 || port > 65535 || !get_bytes(env, rxv, &rx, &rx_len) ||
      !get_bytes(env, metav, &meta, &meta_len) || !get_bytes(env, txv, &tx, &tx_len) || rx_len < 3 * MAX_HEAD ||
      meta_len < (size_t)batch * META_FIELDS * 4) {
    napi_throw_range_error(env, NULL,
                           "batch 1..4096, maxConnections 1..1000000, rx at least 3 heads, meta a batch's fields");
    return NULL;
  }
  struct sockaddr_storage local;
  memset(&local, 0, sizeof local);
  socklen_t local_len;
  struct sockaddr_in *l4 = (struct sockaddr_in *)&local;
  struct sockaddr_in6 *l6 = (struct sockaddr_in6 *)&local;
  int family;
  if (inet_pton(AF_INET, host, &l4->sin_addr) == 1) {
    family = l4->sin_family = AF_INET;
    l4->sin_port = htons((uint16_t)port);
    local_len = sizeof *l4;
  } else if (inet_pton(AF_INET6, host, &l6->sin6_addr) == 1) {
    family = l6->sin6_family = AF_INET6;
    l6->sin6_port = htons((uint16_t)port);
    local_len = sizeof *l6;
  } else {
    napi_throw_type_error(env, NULL, "host must be an IPv4 or IPv6 address");
    return NULL;
  }
  int lfd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (lfd < 0) {
    throw_errno(env, "socket", errno);
    return NULL;
  }
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuse) setsockopt(lfd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (bind(lfd, (struct sockaddr *)&local, local_len) != 0 || listen(lfd, 4096) != 0) {
    int e = errno;
    close(lfd);
    throw_errno(env, "bind/listen", e);
    return NULL;
  }
  local_len = sizeof local;
  getsockname(lfd, (struct sockaddr *)&local, &local_len);
  uint32_t bound = ntohs(family == AF_INET ? l4->sin_port : l6->sin6_port);
  int epfd = epoll_create1(EPOLL_CLOEXEC);
  front_t *s = calloc(1, sizeof *s);
  if (epfd < 0 || !s) {
    close(lfd);
    if (epfd >= 0) close(epfd);
    free(s);
    napi_throw_error(env, NULL, "http-front: out of memory or descriptors");
    return NULL;
  }
  s->env = env;
  s->lfd = lfd;
  s->epfd = epfd;
  s->max_conns = max;
  s->batch = batch;
  s->rx = rx;
  s->rx_len = rx_len;
  s->meta = meta;
  s->tx = tx;
  s->tx_len = tx_len;
  s->conns = calloc(max, sizeof *s->conns);
  s->free_slots = malloc(max * sizeof *s->free_slots);
  s->ready = malloc(max * sizeof *s->ready);
  s->ready_b = malloc(max * sizeof *s->ready_b);
  if (!s->conns || !s->free_slots || !s->ready || !s->ready_b) {
    close(lfd);
    close(epfd);
    free(s->conns);
    free(s->free_slots);
    free(s->ready);
    free(s->ready_b);
    free(s);
    napi_throw_error(env, NULL, "http-front: out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < max; i++) {
    s->conns[i].fd = -1;
    s->free_slots[i] = max - 1 - i;
  }
  s->nfree = max;
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = LISTEN_TAG};
  epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);

  napi_value resource_name;
  CHECK(napi_create_reference(env, argv[1], 1, &s->cb));
  CHECK(napi_create_reference(env, rxv, 1, &s->rx_ref));
  CHECK(napi_create_reference(env, metav, 1, &s->meta_ref));
  CHECK(napi_create_reference(env, txv, 1, &s->tx_ref));
  CHECK(napi_create_string_utf8(env, "HttpFront", NAPI_AUTO_LENGTH, &resource_name));
  CHECK(napi_async_init(env, NULL, resource_name, &s->actx));
  uv_loop_t *loop;
  CHECK(napi_get_uv_event_loop(env, &loop));
  uv_poll_init(loop, &s->poll, epfd);
  s->poll.data = s;
  uv_idle_init(loop, &s->idle);
  s->idle.data = s;
  uv_unref((uv_handle_t *)&s->idle);
  uv_poll_start(&s->poll, UV_READABLE, on_poll);
  napi_add_env_cleanup_hook(env, cleanup_hook, s);

  napi_value handle, port_value;
  CHECK(napi_create_object(env, &result));
  CHECK(napi_create_external(env, s, NULL, NULL, &handle));
  CHECK(napi_create_uint32(env, bound, &port_value));
  CHECK(napi_set_named_property(env, result, "handle", handle));
  CHECK(napi_set_named_property(env, result, "port", port_value));
  return result;
fail:
  napi_throw_error(env, NULL, "http-front: listen failed");
  return NULL;
}

static front_t *front_of(napi_env env, napi_value v) {
  void *data = NULL;
  if (napi_get_value_external(env, v, &data) != napi_ok) return NULL;
  front_t *s = data;
  return s && !s->closing ? s : NULL;
}

/**
 * respond(handle, slot, gen, bytes) → boolean: answers a request left waiting (M_TX_LEN 0) after its batch; false when
 * its connection is gone or has no request waiting.
 */
static napi_value js_respond(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], out;
  bool ok = false;
  uint32_t slot = 0, gen = 0;
  void *data;
  size_t len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc == 4) {
    front_t *s = front_of(env, argv[0]);
    if (s && napi_get_value_uint32(env, argv[1], &slot) == napi_ok &&
        napi_get_value_uint32(env, argv[2], &gen) == napi_ok && get_bytes(env, argv[3], &data, &len) &&
        slot < s->max_conns) {
      conn_t *c = &s->conns[slot];
      if (c->fd >= 0 && c->gen == gen && c->waiting) {
        ok = true;
        conn_answered(s, c, data, len);
        if (s->in_dispatch == 0 && s->nready > 0 && !s->idling) {
          s->idling = true;
          uv_idle_start(&s->idle, on_idle);
        }
      }
    }
  }
  napi_get_boolean(env, ok, &out);
  return out;
}

/** close(handle): closes the listener and every connection. */
static napi_value js_close(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return NULL;
  front_t *s = front_of(env, argv[0]);
  if (s) close_front(s, false);
  return NULL;
}

static void set_u32(napi_env env, napi_value obj, const char *name, uint32_t v) {
  napi_value n;
  napi_create_uint32(env, v, &n);
  napi_set_named_property(env, obj, name, n);
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value f;
  napi_create_function(env, "listen", NAPI_AUTO_LENGTH, js_listen, NULL, &f);
  napi_set_named_property(env, exports, "listen", f);
  napi_create_function(env, "respond", NAPI_AUTO_LENGTH, js_respond, NULL, &f);
  napi_set_named_property(env, exports, "respond", f);
  napi_create_function(env, "close", NAPI_AUTO_LENGTH, js_close, NULL, &f);
  napi_set_named_property(env, exports, "close", f);
  set_u32(env, exports, "META_FIELDS", META_FIELDS);
  set_u32(env, exports, "MAX_HEAD", MAX_HEAD);
  set_u32(env, exports, "MAX_FIELDS", MAX_FIELDS);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
