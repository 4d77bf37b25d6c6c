// A native HTTP/1.1 front for measuring (issue 12's ceiling row, not the edge's serving path): accepts connections
// and parses request heads in C, hands JavaScript a BATCH of parsed requests per call, and writes the answers
// JavaScript leaves as pre-encoded bytes, or forwards a request to an origin on the same epoll (pooled keep-alive
// connections; the answer's head and body copied to the client in C; see "the origin side" below).
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
#include <sys/uio.h>
#include <time.h>
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
  M_ORIGIN, // set by JavaScript: >= 0 forwards tx[off, +len) (a request head) to that origin (addOrigin's index)
  M_ADD_LEN, // set by JavaScript with M_ORIGIN: tx[off + len, +M_ADD_LEN) are lines added to the answer's head,
  M_DROP_LEN, // of which the first M_DROP_LEN bytes are instead names (each followed by LF) of the origin's fields to drop
  META_FIELDS
};
// A completion record per forwarded request (the `done` Int32Array, D_FIELDS each), handed to JavaScript with the
// next batch (onBatch's second argument): the client's slot and generation, the origin's status (0 when no head
// came), an error code (E_*; 0: the answer was relayed whole), the body bytes relayed to the client (a chunked
// body's data, without its framing; low and high 31 bits), the microseconds from the forward to the answer's head and to its end, whether it was sent
// twice (the keep-alive race). With E_* set and D_WAITING 1, nothing reached the client and the request still waits
// for JavaScript's answer (respond()): JavaScript chooses the error answer, as for its own origin client.
enum { D_SLOT, D_GEN, D_STATUS, D_ERROR, D_BYTES_LO, D_BYTES_HI, D_HEAD_US, D_TOTAL_US, D_RETRIED, D_WAITING, D_FIELDS };
enum {
  E_NONE,
  E_CONNECT,
  E_CLOSED,
  E_RESET,
  E_WRITE,
  E_HEAD,
  E_INTERIM,
  E_FRAMING,
  E_CHUNKED,
  E_BUSY,
  E_INVALID,
  E_MEMORY,
  E_TIMEOUT,
  E_CLIENT, // the client's connection closed before the answer's end
  E_COUNT
};
static const char *const ERROR_NAMES[E_COUNT] = {"",
                                                 "origin-connect",
                                                 "origin-closed",
                                                 "origin-reset",
                                                 "origin-write",
                                                 "origin-head",
                                                 "origin-interim",
                                                 "origin-framing",
                                                 "origin-chunked",
                                                 "origin-busy",
                                                 "forward-invalid",
                                                 "forward-memory",
                                                 "origin-timeout",
                                                 "client-closed"};
/** An answer JavaScript gives (respond, tx) may wait unsent up to this (JavaScript bounds what it makes). */
#define MAX_PENDING_JS (64u * 1024 * 1024)
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
  uint32_t up;      // the origin connection answering this request (NONE: none)
  bool awaiting;    // in an origin's queue for a connection
  bool http10, head_req, idem, retried;
  uint8_t *fwd; // the request head to forward, then the lines to add to the answer's head (2 * MAX_HEAD bytes)
  uint32_t fwd_len, add_len, drop_len;
  uint64_t fwd_at; // when it was forwarded (CLOCK_MONOTONIC, ns)
} conn_t;

#define NONE 0xffffffffu
#define UP_TAG 0x80000000u
#define UP_BUF (64 * 1024)
#define MAX_WAITERS 4096
#define MAX_ORIGINS 256
#define MAX_CHUNK_LINE 4096

enum { UP_FREE, UP_CONNECTING, UP_WRITING, UP_READING, UP_IDLE };
enum { FR_NONE, FR_LENGTH, FR_CHUNKED };
enum { CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER, CH_TRAILER_LINE, CH_TRAILER_LF, CH_END_LF };

/** A connection to an origin: answering one client's request, or idle in its origin's pool. */
typedef struct {
  int fd; // -1: free
  uint32_t gen;
  uint8_t state, framing, cstate;
  bool reused;    // answered a request before (a failure before any byte may be the keep-alive race)
  bool head_done; // the answer's head went to the client
  bool parsed;    // the answer's head was read (its body comes next)
  bool data_seen; // chunked: a data byte came
  bool keep;      // the origin keeps the connection after this answer
  bool digits;    // chunked: a size digit seen
  uint32_t origin;
  uint32_t prev, next;          // the origin's idle list
  uint32_t client, client_gen;  // the client connection it answers
  uint64_t remaining;           // length: body bytes to come; chunked: the chunk's data bytes to come
  uint32_t line;                // chunked: bytes of the current size or trailer line
  uint8_t *buf;                 // UP_BUF bytes, allocated on first use
  uint32_t len, woff, events;
  uint32_t idle_at; // the front's epoll_wait count when it went idle
  int status;       // the answer's status
  uint64_t sent;    // body bytes of the answer relayed to the client (chunked: the data, not the framing)
  uint64_t head_at; // when its head came (ns)
  uint8_t *hold;    // HOLD_BYTES: the client's head (and chunk framing) held until a body byte comes
  uint32_t hold_len;
} up_t;
/** The head made for the client (2 * MAX_HEAD + 64 at most) and a chunk size line with its extensions. */
#define HOLD_BYTES (2 * MAX_HEAD + 64 + MAX_CHUNK_LINE + 64)

typedef struct {
  struct sockaddr_storage addr;
  socklen_t addr_len;
  uint32_t max, open, idle_head, idle_tail; // the idle list: newest at the head, oldest (taken first) at the tail
  uint32_t *wq; // clients waiting for a connection: (slot, gen) pairs, a ring of MAX_WAITERS
  uint32_t wq_head, wq_n;
  bool in_next;
} origin_t;

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
  origin_t *origins;
  uint32_t norigins;
  up_t *ups;
  uint32_t max_ups, *free_ups, nfree_ups;
  uint32_t waits;   // epoll_wait calls
  uint32_t drained; // the last epoll_wait that returned every ready event, all of them handled
  bool peek_always; // check every pooled connection with a peek when taken, not only those not seen since idle
  int32_t *done;    // completion records (D_FIELDS each), JavaScript's; NULL: none kept
  uint32_t done_max, ndone, done_lost;
  bool fail_to_js;  // a forward that fails before any byte reached the client is handed back (D_WAITING), no 502
  napi_ref done_ref;
} front_t;

typedef struct {
  uint32_t method_off, method_len, target_off, target_len, path_len, host_off, host_len;
  uint32_t ua_off, ua_len, ae_off, ae_len, cookie_off, cookie_len;
  int flags;
} head_t;

static void on_poll(uv_poll_t *h, int status, int events);
static void on_idle(uv_idle_t *h);
static void up_abort(front_t *s, conn_t *c);
static void up_resume(front_t *s, conn_t *c);

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/** A forwarded request's completion record (see D_*); u: its origin connection, when it had one. */
static void record(front_t *s, const conn_t *c, const up_t *u, int err, bool waiting) {
  if (!s->done) return;
  if (s->ndone == s->done_max) {
    s->done_lost++;
    return;
  }
  int32_t *d = s->done + (size_t)s->ndone++ * D_FIELDS;
  uint64_t now = now_ns(), sent = u ? u->sent : 0;
  d[D_SLOT] = (int32_t)(c - s->conns);
  d[D_GEN] = (int32_t)c->gen;
  d[D_STATUS] = u ? u->status : 0;
  d[D_ERROR] = err;
  d[D_BYTES_LO] = (int32_t)(sent & 0x7fffffff);
  d[D_BYTES_HI] = (int32_t)(sent >> 31);
  d[D_HEAD_US] = u && u->head_at ? (int32_t)((u->head_at - c->fwd_at) / 1000) : -1;
  d[D_TOTAL_US] = (int32_t)((now - c->fwd_at) / 1000);
  d[D_RETRIED] = c->retried;
  d[D_WAITING] = waiting;
}

/** Records made outside a batch's call reach JavaScript on the loop's next turn (uv_idle), if no batch comes first. */
static void schedule_flush(front_t *s) {
  if (s->ndone > 0 && s->in_dispatch == 0 && !s->idling && !s->closing) {
    s->idling = true;
    uv_idle_start(&s->idle, on_idle);
  }
}

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
  if (c->up != NONE) up_abort(s, c); // its answer is cut: the origin connection cannot be reused
  if (c->awaiting) record(s, c, NULL, E_CLIENT, false);
  c->awaiting = false; // a place in an origin's queue is skipped by its generation
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
    size_t want = c->wlen - c->woff;
    ssize_t r = write(c->fd, c->wbuf + c->woff, want);
    if (r > 0) {
      c->woff += (uint32_t)r;
      if ((size_t)r < want) { // short: the socket's buffer is full, another write would only say EAGAIN
        set_events(s, c);
        return;
      }
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
  if (c->up != NONE) up_resume(s, c); // the client took what it was sent: read on from the origin
}

/** Keeps bytes to send once the socket takes them (EPOLLOUT), up to `limit` unsent; false when it closed instead. */
static bool conn_queue(front_t *s, conn_t *c, const uint8_t *p, size_t len, size_t limit) {
  if (c->wlen + len > limit) {
    conn_close(s, c);
    return false;
  }
  if (c->wlen + len > c->wcap) {
    size_t cap = c->wcap ? c->wcap : 4096;
    while (cap < c->wlen + len) cap *= 2;
    uint8_t *b = realloc(c->wbuf, cap);
    if (!b) {
      conn_close(s, c);
      return false;
    }
    c->wbuf = b;
    c->wcap = (uint32_t)cap;
  }
  memcpy(c->wbuf + c->wlen, p, len);
  c->wlen += (uint32_t)len;
  set_events(s, c);
  return true;
}

/**
 * Sends bytes (straight to the socket when nothing is pending), keeping up to `limit` unsent; false when the
 * connection was closed. A short write is not followed by another: the socket's buffer is full, and the rest waits for
 * EPOLLOUT.
 */
static bool conn_send_max(front_t *s, conn_t *c, const uint8_t *p, size_t len, size_t limit) {
  if (c->wlen == c->woff && len > 0) {
    c->wlen = c->woff = 0;
    ssize_t r;
    do r = write(c->fd, p, len);
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      conn_close(s, c);
      return false;
    }
    if (r > 0) {
      p += r;
      len -= (size_t)r;
    }
    if (len == 0) return true;
  }
  return len == 0 || conn_queue(s, c, p, len, limit);
}

static bool conn_send(front_t *s, conn_t *c, const uint8_t *p, size_t len) {
  return conn_send_max(s, c, p, len, MAX_PENDING);
}

/** Sends a then b (one writev when nothing is pending: an answer's head and the body bytes read with it). */
static bool conn_send2(front_t *s, conn_t *c, const uint8_t *a, size_t an, const uint8_t *b, size_t bn) {
  if (c->wlen == c->woff && an > 0 && bn > 0) {
    c->wlen = c->woff = 0;
    struct iovec iov[2] = {{(void *)a, an}, {(void *)b, bn}};
    ssize_t r;
    do r = writev(c->fd, iov, 2);
    while (r < 0 && errno == EINTR);
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      conn_close(s, c);
      return false;
    }
    size_t w = r < 0 ? 0 : (size_t)r;
    if (w == an + bn) return true;
    // short (or EAGAIN): the socket's buffer is full; the rest is kept for EPOLLOUT without another write
    if (w >= an) return conn_queue(s, c, b + (w - an), bn - (w - an), MAX_PENDING);
    return conn_queue(s, c, a + w, an - w, MAX_PENDING) && conn_queue(s, c, b, bn, MAX_PENDING);
  }
  return (an == 0 || conn_send(s, c, a, an)) && (bn == 0 || conn_send(s, c, b, bn));
}

static void queue_ready(front_t *s, conn_t *c) {
  if (c->queued) return;
  c->queued = true;
  s->ready[s->nready++] = (uint32_t)(c - s->conns);
}

/** The request with JavaScript is answered: close if asked, else parse what followed it. */
static void conn_answered(front_t *s, conn_t *c, const uint8_t *p, size_t len) {
  c->waiting = false;
  if (len > 0 && !conn_send_max(s, c, p, len, MAX_PENDING_JS)) return;
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

/** Whether the field name p[0, n) is one of the LF-terminated names in list[0, len) (case-insensitive). */
static bool name_listed(const uint8_t *p, size_t n, const uint8_t *list, size_t len) {
  size_t i = 0;
  while (i < len) {
    const uint8_t *lf = memchr(list + i, '\n', len - i);
    size_t k = lf ? (size_t)(lf - (list + i)) : len - i;
    if (k == n) {
      size_t q = 0;
      while (q < n && (p[q] | 0x20) == (list[i + q] | 0x20)) q++;
      if (q == n) return true;
    }
    i += k + 1;
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
  m[M_ORIGIN] = -1;
  m[M_ADD_LEN] = 0;
  m[M_DROP_LEN] = 0;
  c->http10 = (h.flags & F_HTTP10) != 0;
  c->head_req = (h.flags & F_HEAD) != 0;
  c->idem = c->head_req || (h.method_len == 3 && memcmp(c->rbuf, "GET", 3) == 0);
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

// ---- the origin side --------------------------------------------------------------------------------------------
//
// JavaScript answers a request with "forward to origin N" and the request head to send (M_ORIGIN, tx). The head goes
// to a connection of the origin's pool (bounded: `poolSize` open connections; more requests wait in a bounded queue,
// 502 origin-busy beyond it); the answer's head is parsed for its framing only (Content-Length, Transfer-Encoding:
// chunked, Connection) and written to the client with the hop-by-hop fields replaced, then the body is copied to the
// client as it comes, never through JavaScript. Reading from the origin stops while the client has unsent bytes
// (backpressure). Refused with 502 and an x-edge-error field (or, once bytes of the answer were sent, the client's
// connection closed): interim (1xx) and upgrade answers, a close-delimited body, a Transfer-Encoding other than
// chunked, both Content-Length and Transfer-Encoding, conflicting lengths, malformed or over-MAX_HEAD heads, malformed
// chunks. A pooled connection is reused only when the origin did not say it closes (Connection: close, or HTTP/1.0
// without keep-alive), its answer ended exactly where its framing said, and it is still open and silent when taken
// (an idle connection is watched for a close, and checked with a peek when taken); a GET or HEAD that fails on a
// reused connection before any byte of the answer (the origin closed it meanwhile) is sent once more on another.

static uint64_t up_tag(const front_t *s, const up_t *u) {
  return ((uint64_t)u->gen << 32) | (UP_TAG | (uint32_t)(u - s->ups));
}

static void up_set_events(front_t *s, up_t *u, uint32_t want) {
  if (want == u->events) return;
  struct epoll_event ev = {.events = want, .data.u64 = up_tag(s, u)};
  epoll_ctl(s->epfd, EPOLL_CTL_MOD, u->fd, &ev);
  u->events = want;
}

static void idle_remove(front_t *s, origin_t *o, up_t *u) {
  if (u->prev != NONE) s->ups[u->prev].next = u->next;
  else o->idle_head = u->next;
  if (u->next != NONE) s->ups[u->next].prev = u->prev;
  else o->idle_tail = u->prev;
  u->prev = u->next = NONE;
}

static void origin_next(front_t *s, uint32_t oi);

/** Closes an origin connection; `next`: give a waiting client a new one in its place. */
static void up_close(front_t *s, up_t *u, bool next) {
  uint32_t oi = u->origin;
  origin_t *o = &s->origins[oi];
  if (u->state == UP_IDLE) idle_remove(s, o, u);
  close(u->fd);
  u->fd = -1;
  u->gen++;
  u->state = UP_FREE;
  u->client = NONE;
  u->len = 0;
  o->open--;
  s->free_ups[s->nfree_ups++] = (uint32_t)(u - s->ups);
  if (next) origin_next(s, oi);
}

/**
 * Nothing of the answer reached the client: with failToJs the request is handed back to JavaScript (a record with
 * D_WAITING; it answers with respond()), else answered 502 with the error's code (the connection kept unless it was
 * to close). u: the origin connection that failed, if any.
 */
static void client_fail(front_t *s, conn_t *c, int err, const up_t *u) {
  if (s->fail_to_js && s->done) {
    record(s, c, u, err, true);
    schedule_flush(s);
    return;
  }
  record(s, c, u, err, false);
  char b[256];
  int n = snprintf(b, sizeof b, "HTTP/1.1 502 Bad Gateway\r\nx-edge-error: %s\r\ncontent-length: 0\r\n%s\r\n", ERROR_NAMES[err],
                   c->close_after ? "connection: close\r\n" : c->http10 ? "connection: keep-alive\r\n" : "");
  conn_answered(s, c, (const uint8_t *)b, (size_t)n);
}

static void origin_acquire(front_t *s, conn_t *c, uint32_t oi);

/** The origin connection failed: the client gets a 502 (or a retry, or its connection closed if bytes went out). */
static void up_fail(front_t *s, up_t *u, int err) {
  conn_t *c = &s->conns[u->client];
  uint32_t oi = u->origin;
  bool sent = u->head_done;
  bool retry = !sent && !u->parsed && u->len == 0 && u->reused && c->idem && !c->retried;
  c->up = NONE;
  up_close(s, u, false);
  if (retry) {
    c->retried = true;
    origin_acquire(s, c, oi);
  } else if (sent) {
    record(s, c, u, err, false);
    conn_close(s, c); // part of the answer went out: a close is the only honest end
  } else {
    client_fail(s, c, err, u);
  }
  origin_next(s, oi);
}

/** The client's connection closes while its answer comes: the origin connection goes too (its answer is unread). */
static void up_abort(front_t *s, conn_t *c) {
  up_t *u = &s->ups[c->up];
  c->up = NONE;
  record(s, c, u, E_CLIENT, false);
  up_close(s, u, true);
}

static void up_write(front_t *s, up_t *u) {
  conn_t *c = &s->conns[u->client];
  while (u->woff < c->fwd_len) {
    size_t want = c->fwd_len - u->woff;
    ssize_t r = send(u->fd, c->fwd + u->woff, want, MSG_NOSIGNAL);
    if (r > 0) {
      u->woff += (uint32_t)r;
      if ((size_t)r < want) { // short: the socket's buffer is full; the rest on EPOLLOUT
        up_set_events(s, u, EPOLLOUT);
        return;
      }
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      up_set_events(s, u, EPOLLOUT);
      return;
    }
    up_fail(s, u, E_WRITE);
    return;
  }
  u->state = UP_READING;
  up_set_events(s, u, EPOLLIN | EPOLLRDHUP);
}

/** Starts the client's request on the connection (connected, idle or new). */
static void up_begin(front_t *s, up_t *u, conn_t *c) {
  u->client = (uint32_t)(c - s->conns);
  u->client_gen = c->gen;
  c->up = (uint32_t)(u - s->ups);
  u->woff = 0;
  u->len = 0;
  u->head_done = false;
  u->parsed = false;
  u->data_seen = false;
  u->hold_len = 0;
  u->status = 0;
  u->sent = 0;
  u->head_at = 0;
  u->state = UP_WRITING;
  up_write(s, u);
}

static void up_connect(front_t *s, uint32_t oi, conn_t *c) {
  origin_t *o = &s->origins[oi];
  int fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    client_fail(s, c, E_CONNECT, NULL);
    return;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  uint32_t idx = s->free_ups[--s->nfree_ups];
  up_t *u = &s->ups[idx];
  u->status = 0;
  u->sent = 0;
  u->head_at = 0;
  if (!u->buf && !(u->buf = malloc(UP_BUF))) {
    s->nfree_ups++;
    close(fd);
    client_fail(s, c, E_CONNECT, NULL);
    return;
  }
  u->fd = fd;
  u->origin = oi;
  u->reused = false;
  u->prev = u->next = NONE;
  o->open++;
  int r = connect(fd, (struct sockaddr *)&o->addr, o->addr_len);
  u->events = r == 0 ? EPOLLIN | EPOLLRDHUP : EPOLLOUT;
  struct epoll_event ev = {.events = u->events, .data.u64 = up_tag(s, u)};
  if ((r != 0 && errno != EINPROGRESS) || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
    u->client = NONE;
    up_close(s, u, false);
    client_fail(s, c, E_CONNECT, NULL);
    return;
  }
  if (r == 0) {
    up_begin(s, u, c);
    return;
  }
  u->state = UP_CONNECTING;
  u->client = (uint32_t)(c - s->conns);
  u->client_gen = c->gen;
  u->len = 0;
  u->head_done = false;
  u->parsed = false;
  u->data_seen = false;
  u->hold_len = 0;
  u->status = 0;
  u->sent = 0;
  u->head_at = 0;
  c->up = idx;
}

/** Gives the client's request a connection of the origin: a pooled one still open, a new one, or a place in line. */
static void origin_acquire(front_t *s, conn_t *c, uint32_t oi) {
  origin_t *o = &s->origins[oi];
  // The oldest idle connection first: it has most likely been through a drained epoll_wait since it went idle (see
  // below), so it goes without a peek; the newest, taken first, had most often not (a recv per request more).
  while (o->idle_tail != NONE) {
    up_t *u = &s->ups[o->idle_tail];
    idle_remove(s, o, u);
    u->state = UP_WRITING;
    // A close (or any byte) from an idle connection is an epoll event that closes it. Once an epoll_wait after it went
    // idle has returned every ready event and all were handled, a close that arrived before that wait is known: a
    // GET or HEAD goes without a peek (a close after the wait is the keep-alive race, which the retry covers); any
    // other method, or a connection not seen by such a wait yet, is peeked.
    if (!s->peek_always && c->idem && (int32_t)(s->drained - u->idle_at) > 0) {
      up_begin(s, u, c);
      return;
    }
    uint8_t b;
    ssize_t r = recv(u->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      up_begin(s, u, c);
      return;
    }
    up_close(s, u, false); // closed by the origin, or bytes nobody asked for
  }
  if (o->open < o->max && s->nfree_ups > 0) {
    up_connect(s, oi, c);
    return;
  }
  if (o->wq_n == MAX_WAITERS) {
    client_fail(s, c, E_BUSY, NULL);
    return;
  }
  uint32_t at = (o->wq_head + o->wq_n++) % MAX_WAITERS;
  o->wq[2 * at] = (uint32_t)(c - s->conns);
  o->wq[2 * at + 1] = c->gen;
  c->awaiting = true;
}

/** Clients waiting for a connection of the origin get one while there is one (pooled or room for a new one). */
static void origin_next(front_t *s, uint32_t oi) {
  origin_t *o = &s->origins[oi];
  if (o->in_next) return;
  o->in_next = true;
  while (o->wq_n > 0 && (o->idle_head != NONE || (o->open < o->max && s->nfree_ups > 0))) {
    uint32_t slot = o->wq[2 * o->wq_head], gen = o->wq[2 * o->wq_head + 1];
    o->wq_head = (o->wq_head + 1) % MAX_WAITERS;
    o->wq_n--;
    conn_t *c = &s->conns[slot];
    if (c->fd < 0 || c->gen != gen || !c->awaiting) continue; // gone meanwhile
    c->awaiting = false;
    origin_acquire(s, c, oi);
  }
  o->in_next = false;
}

/** The answer is complete: the connection back to the pool (or closed), the client free for its next request. */
static void up_done(front_t *s, up_t *u, conn_t *c) {
  uint32_t oi = u->origin;
  origin_t *o = &s->origins[oi];
  record(s, c, u, E_NONE, false);
  c->up = NONE;
  u->client = NONE;
  if (u->keep) {
    u->reused = true;
    u->state = UP_IDLE;
    u->idle_at = s->waits;
    u->prev = NONE;
    u->next = o->idle_head;
    if (u->next != NONE) s->ups[u->next].prev = (uint32_t)(u - s->ups);
    else o->idle_tail = (uint32_t)(u - s->ups);
    o->idle_head = (uint32_t)(u - s->ups);
    up_set_events(s, u, EPOLLIN | EPOLLRDHUP); // any byte or close from an idle connection closes it
  } else {
    up_close(s, u, false);
  }
  conn_answered(s, c, NULL, 0);
  origin_next(s, oi);
}

static int hexval(uint8_t ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  ch |= 0x20;
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return -1;
}

/** Scans chunked framing in p[0, n): the bytes that belong to the answer (all but what follows its end). */
static size_t chunk_scan(up_t *u, const uint8_t *p, size_t n, bool *done, bool *bad) {
  size_t i = 0;
  while (i < n) {
    uint8_t ch = p[i];
    switch (u->cstate) {
    case CH_SIZE: {
      int v = hexval(ch);
      if (v >= 0) {
        if (u->remaining >> 56) goto bad;
        u->remaining = u->remaining * 16 + (uint64_t)v;
        u->digits = true;
        i++;
        break;
      }
      if (!u->digits) goto bad;
      if (ch == ';' || ch == ' ' || ch == '\t') u->cstate = CH_EXT, u->line = 0;
      else if (ch == '\r') u->cstate = CH_SIZE_LF;
      else goto bad;
      i++;
      break;
    }
    case CH_EXT:
    case CH_TRAILER_LINE: // the rest of a size line (its extensions) or a trailer line, up to its CR
      if (ch == '\r') u->cstate = u->cstate == CH_EXT ? CH_SIZE_LF : CH_TRAILER_LF;
      else if (ch == '\n' || (ch < 0x20 && ch != '\t') || ch == 0x7f || ++u->line > MAX_CHUNK_LINE) goto bad;
      i++;
      break;
    case CH_DATA: {
      size_t k = n - i < u->remaining ? n - i : (size_t)u->remaining;
      u->data_seen = true;
      u->sent += k; // the body's bytes, not its framing
      i += k;
      u->remaining -= k;
      if (u->remaining == 0) u->cstate = CH_DATA_CR;
      break;
    }
    case CH_TRAILER:
      if (ch == '\r') {
        u->cstate = CH_END_LF;
        i++;
        break;
      }
      if (ch == ' ' || ch == '\t') goto bad; // obs-fold
      u->cstate = CH_TRAILER_LINE;
      u->line = 0;
      break;
    default: // one expected byte: the CR after a chunk's data, or the LF of a CRLF
      if (ch != (u->cstate == CH_DATA_CR ? '\r' : '\n')) goto bad;
      i++;
      switch (u->cstate) {
      case CH_SIZE_LF:
        u->digits = false;
        u->cstate = u->remaining ? CH_DATA : CH_TRAILER;
        break;
      case CH_DATA_CR: u->cstate = CH_DATA_LF; break;
      case CH_DATA_LF: u->cstate = CH_SIZE; break;
      case CH_TRAILER_LF: u->cstate = CH_TRAILER; break;
      default: *done = true; return i; // CH_END_LF
      }
      break;
    }
  }
  return i;
bad:
  *bad = true;
  return i;
}

/**
 * Body bytes p[0, n) of the answer: to the client up to the answer's end, after pre[0, pre_len) (the answer's head,
 * when these bytes came with it). False when the connection is done or gone.
 */
static bool up_body(front_t *s, up_t *u, conn_t *c, const uint8_t *pre, size_t pre_len, const uint8_t *p, size_t n) {
  size_t take = 0;
  bool done = false, bad = false;
  if (u->framing == FR_NONE) {
    done = true;
  } else if (u->framing == FR_LENGTH) {
    take = n < u->remaining ? n : (size_t)u->remaining;
    u->remaining -= take;
    done = u->remaining == 0;
  } else {
    take = chunk_scan(u, p, n, &done, &bad);
  }
  if (bad && !u->head_done) {
    up_fail(s, u, E_CHUNKED); // nothing went out yet: a 502 can be the answer
    return false;
  }
  if (!u->head_done) {
    // The head goes out with the first body byte (as the edge's other path writes it): an origin that fails before
    // any is answered 502, never a head and a close. Held meanwhile with the chunk framing read so far.
    if (pre_len == 0) {
      pre = u->hold;
      pre_len = u->hold_len;
    }
    if (!done && (u->framing == FR_LENGTH ? take == 0 : !u->data_seen)) {
      if (!u->hold && !(u->hold = malloc(HOLD_BYTES))) {
        up_fail(s, u, E_MEMORY);
        return false;
      }
      if (pre_len + take > HOLD_BYTES) {
        up_fail(s, u, E_CHUNKED);
        return false;
      }
      if (pre != u->hold) memcpy(u->hold, pre, pre_len);
      memcpy(u->hold + pre_len, p, take);
      u->hold_len = (uint32_t)(pre_len + take);
      return true;
    }
    u->head_done = true;
    u->hold_len = 0;
  }
  if ((take > 0 || pre_len > 0) && !conn_send2(s, c, pre, pre_len, p, take))
    return false; // the client is gone, and the origin connection with it
  if (u->framing == FR_LENGTH) u->sent += take;
  if (bad) {
    up_fail(s, u, E_CHUNKED);
    return false;
  }
  if (!done) return true;
  if (take < n) u->keep = false; // bytes after the answer's end: the origin is not speaking HTTP as we read it
  up_done(s, u, c);
  return false;
}

/**
 * The answer's head u->buf[0, end): checked, its framing taken, made into the client's head in out (its length in
 * *out_len) with the hop-by-hop fields (Connection, Keep-Alive, Proxy-Connection; TE, Trailer and Upgrade dropped) replaced by the client connection's
 * own. False when it was refused.
 */
static bool up_head(front_t *s, up_t *u, conn_t *c, size_t end, uint8_t *out, size_t *out_len) {
  const uint8_t *p = u->buf;
  int why = E_HEAD;
  if (end < 16 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ' || p[9] < '1' ||
      p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' || (p[12] != ' ' && p[12] != '\r'))
    goto refuse;
  bool v10 = p[7] == '0';
  int status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
  u->status = status;
  if (status < 200) {
    why = E_INTERIM; // 1xx and 101 (an upgrade) are not relayed here
    goto refuse;
  }
  size_t k = 0;
  size_t i = 9;
  while (i < end && p[i] != '\r') {
    if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f) goto refuse;
    i++;
  }
  memcpy(out, "HTTP/1.1 ", 9);
  memcpy(out + 9, p + 9, i + 2 - 9);
  k = i + 2;
  i += 2;
  bool has_cl = false, has_te = false, conn_close = false, conn_keep = false;
  uint64_t cl = 0;
  while (i + 2 < end || (i + 2 == end && p[i] != '\r')) {
    if (p[i] == ' ' || p[i] == '\t') goto refuse; // obs-fold
    size_t ns = i;
    while (i < end && tchar(p[i])) i++;
    if (i == ns || i >= end || p[i] != ':') goto refuse;
    size_t nl = i - ns;
    i++;
    while (i < end && (p[i] == ' ' || p[i] == '\t')) i++;
    size_t vs = i;
    while (i < end && p[i] != '\r') {
      if ((p[i] < 0x20 && p[i] != '\t') || p[i] == 0x7f) goto refuse;
      i++;
    }
    if (i + 1 >= end || p[i + 1] != '\n') goto refuse;
    size_t ve = i;
    while (ve > vs && (p[ve - 1] == ' ' || p[ve - 1] == '\t')) ve--;
    const uint8_t *name = p + ns, *v = p + vs;
    size_t vl = ve - vs;
    i += 2;
    uint8_t c0 = name[0] | 0x20;
    bool copy = true;
    if (c0 == 'c' && name_is(name, nl, "content-length")) {
      uint64_t value = 0;
      if (vl == 0 || vl > 15) goto framing;
      for (size_t q = 0; q < vl; q++) {
        if (v[q] < '0' || v[q] > '9') goto framing;
        value = value * 10 + (v[q] - '0');
      }
      if (has_cl && value != cl) goto framing;
      has_cl = true;
      cl = value;
    } else if (c0 == 't' && name_is(name, nl, "transfer-encoding")) {
      if (has_te || !name_is(v, vl, "chunked")) goto framing;
      has_te = true;
    } else if (c0 == 'c' && name_is(name, nl, "connection")) {
      if (has_token(v, vl, "close")) conn_close = true;
      if (has_token(v, vl, "keep-alive")) conn_keep = true;
      copy = false;
    } else if ((c0 == 'k' && name_is(name, nl, "keep-alive")) || (c0 == 'p' && name_is(name, nl, "proxy-connection")) ||
               (c0 == 't' && (name_is(name, nl, "te") || name_is(name, nl, "trailer"))) ||
               (c0 == 'u' && name_is(name, nl, "upgrade"))) {
      copy = false; // hop-by-hop (RFC 9110 §7.6.1), as the edge's other path drops them
    } else if (c->drop_len > 0 && name_listed(name, nl, c->fwd + MAX_HEAD, c->drop_len)) {
      copy = false; // a response header rule's set or remove
    }
    if (copy) {
      memcpy(out + k, name, i - ns);
      k += i - ns;
    }
  }
  if (has_te && (has_cl || v10)) goto framing; // CL with TE: a smuggling shape; TE in HTTP/1.0 is not defined
  if (c->head_req || status == 204 || status == 304) {
    u->framing = FR_NONE;
  } else if (has_te) {
    if (c->http10) goto framing; // a chunked body cannot go to an HTTP/1.0 client as it is
    u->framing = FR_CHUNKED;
    u->cstate = CH_SIZE;
    u->remaining = 0;
    u->digits = false;
  } else if (has_cl) {
    u->framing = FR_LENGTH;
    u->remaining = cl;
  } else {
    goto framing; // a body delimited by the close: not relayed here
  }
  u->keep = v10 ? conn_keep && !conn_close : !conn_close;
  memcpy(out + k, c->fwd + MAX_HEAD + c->drop_len, c->add_len - c->drop_len); // JavaScript's lines
  k += c->add_len - c->drop_len;
  const char *conn = c->close_after ? "connection: close\r\n" : c->http10 ? "connection: keep-alive\r\n" : "";
  size_t cn = strlen(conn);
  memcpy(out + k, conn, cn);
  k += cn;
  out[k++] = '\r';
  out[k++] = '\n';
  u->parsed = true;
  u->head_at = now_ns();
  *out_len = k;
  return true;
framing:
  why = E_FRAMING;
refuse:
  up_fail(s, u, why);
  return false;
}

/** The end of the answer's head in p[0, n): its length with the blank line, 0 when not complete, -1 on a bare LF. */
static long resp_head_end(const uint8_t *p, size_t n) {
  size_t k = 0;
  while (k < n) {
    const uint8_t *lf = memchr(p + k, '\n', n - k);
    if (!lf) return 0;
    size_t at = (size_t)(lf - p);
    if (at == 0 || p[at - 1] != '\r') return -1;
    if (at >= 3 && p[at - 2] == '\n' && p[at - 3] == '\r') return (long)(at + 1);
    k = at + 1;
  }
  return 0;
}

/** Reads the answer while the client takes what it is sent. */
static void up_read(front_t *s, up_t *u) {
  conn_t *c = &s->conns[u->client];
  bool drained = false;
  for (;;) {
    if (c->wlen > c->woff) {
      up_set_events(s, u, 0); // the client has unsent bytes: wait for it (up_resume)
      return;
    }
    if (drained) { // the last read was short: the socket had no more, another read would only say EAGAIN
      up_set_events(s, u, EPOLLIN | EPOLLRDHUP);
      return;
    }
    if (u->parsed) u->len = 0;
    size_t room = UP_BUF - u->len;
    ssize_t r = read(u->fd, u->buf + u->len, room);
    if (r == 0) {
      up_fail(s, u, E_CLOSED);
      return;
    }
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        up_set_events(s, u, EPOLLIN | EPOLLRDHUP);
        return;
      }
      up_fail(s, u, E_RESET);
      return;
    }
    drained = (size_t)r < room;
    if (u->parsed) {
      if (!up_body(s, u, c, NULL, 0, u->buf, (size_t)r)) return;
      continue;
    }
    u->len += (uint32_t)r;
    long end = resp_head_end(u->buf, u->len < MAX_HEAD ? u->len : MAX_HEAD);
    if (end < 0 || (end == 0 && u->len >= MAX_HEAD)) {
      up_fail(s, u, E_HEAD);
      return;
    }
    if (end == 0) continue;
    uint8_t out[2 * MAX_HEAD + 64];
    size_t out_len = 0;
    if (!up_head(s, u, c, (size_t)end, out, &out_len)) return;
    if (!up_body(s, u, c, out, out_len, u->buf + end, u->len - (size_t)end)) return;
  }
}

static void up_resume(front_t *s, conn_t *c) {
  up_t *u = &s->ups[c->up];
  if (u->state == UP_READING) up_read(s, u);
}

static void up_event(front_t *s, up_t *u, uint32_t e) {
  switch (u->state) {
  case UP_IDLE:
    up_close(s, u, true); // an idle connection spoke or closed: it is not reused
    return;
  case UP_CONNECTING: {
    int err = 0;
    socklen_t len = sizeof err;
    if ((e & (EPOLLERR | EPOLLHUP)) || getsockopt(u->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      up_fail(s, u, E_CONNECT);
      return;
    }
    u->state = UP_WRITING;
    u->woff = 0;
    up_write(s, u);
    return;
  }
  case UP_WRITING:
    if (e & EPOLLERR) up_fail(s, u, E_WRITE);
    else up_write(s, u);
    return;
  case UP_READING: {
    conn_t *c = &s->conns[u->client];
    if (c->wlen > c->woff) { // paused for the client: only an error is reported here
      if (e & (EPOLLERR | EPOLLHUP)) up_fail(s, u, E_RESET);
      return;
    }
    up_read(s, u);
    return;
  }
  default:
    return;
  }
}

/** The request is to go to origin oi with the head p[0, len). */
static void forward(front_t *s, conn_t *c, int32_t oi, const uint8_t *p, size_t len, const uint8_t *add,
                    size_t add_len, size_t drop_len) {
  c->fwd_at = now_ns();
  c->retried = false;
  if (oi < 0 || (uint32_t)oi >= s->norigins || len == 0 || len > MAX_HEAD || add_len > MAX_HEAD || drop_len > add_len) {
    client_fail(s, c, E_INVALID, NULL);
    return;
  }
  if (!c->fwd && !(c->fwd = malloc(2 * MAX_HEAD))) {
    client_fail(s, c, E_MEMORY, NULL);
    return;
  }
  memcpy(c->fwd, p, len);
  if (add_len > 0) memcpy(c->fwd + MAX_HEAD, add, add_len);
  c->add_len = (uint32_t)add_len;
  c->drop_len = (uint32_t)drop_len;
  c->fwd_len = (uint32_t)len;
  origin_acquire(s, c, (uint32_t)oi);
}

// ---- JavaScript -------------------------------------------------------------------------------------------------

static void call_handler(front_t *s, unsigned n, unsigned d) {
  napi_env env = s->env;
  napi_handle_scope scope;
  if (napi_open_handle_scope(env, &scope) != napi_ok) return;
  napi_value cb, recv, args[2], result;
  if (napi_get_reference_value(env, s->cb, &cb) == napi_ok && napi_get_global(env, &recv) == napi_ok &&
      napi_create_uint32(env, n, &args[0]) == napi_ok && napi_create_uint32(env, d, &args[1]) == napi_ok) {
    if (napi_make_callback(env, s->actx, recv, cb, 2, args, &result) != napi_ok) {
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

/** Hands the batch and the completion records to JavaScript, then writes its answers. */
static void dispatch(front_t *s) {
  unsigned n = s->n, d = s->ndone;
  if ((n == 0 && d == 0) || s->closing || s->in_dispatch > 0) return;
  s->in_dispatch++;
  call_handler(s, n, d);
  s->in_dispatch--;
  if (s->closing) {
    if (s->in_dispatch == 0) release(s);
    return;
  }
  // records made during the call (a forward() that failed at once) stay for the next one
  if (s->ndone > d) memmove(s->done, s->done + (size_t)d * D_FIELDS, (size_t)(s->ndone - d) * D_FIELDS * 4);
  s->ndone -= d;
  for (unsigned i = 0; i < n; i++) {
    int32_t *m = s->meta + (size_t)i * META_FIELDS;
    uint32_t slot = (uint32_t)m[M_SLOT];
    if (slot >= s->max_conns) continue;
    conn_t *c = &s->conns[slot];
    if (c->fd < 0 || c->gen != (uint32_t)m[M_GEN] || !c->waiting) continue; // gone, or answered by respond()
    int32_t off = m[M_TX_OFF], len = m[M_TX_LEN];
    if (len < 0) conn_close(s, c);
    else if (m[M_ORIGIN] >= 0 && len > 0 && off >= 0 && m[M_ADD_LEN] >= 0 && m[M_DROP_LEN] >= 0 &&
             (size_t)off + (size_t)len + (size_t)m[M_ADD_LEN] <= s->tx_len)
      forward(s, c, m[M_ORIGIN], s->tx + off, (size_t)len, s->tx + off + len, (size_t)m[M_ADD_LEN],
              (size_t)m[M_DROP_LEN]);
    else if (len > 0 && off >= 0 && (size_t)off + (size_t)len <= s->tx_len) conn_answered(s, c, s->tx + off, (size_t)len);
  }
  s->n = 0;
  s->rx_at = 0;
  schedule_flush(s);
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
  } else if (s->nready == 0 && s->ndone == 0 && s->idling) {
    s->idling = false;
    uv_idle_stop(&s->idle);
  }
}

static void on_idle(uv_idle_t *h) {
  front_t *s = h->data;
  if (s->closing) return;
  if (s->ndone > 0) dispatch(s);
  if (s->closing) return;
  pump(s);
}

static void on_poll(uv_poll_t *h, int status, int events) {
  front_t *s = h->data;
  if (s->closing) return;
  struct epoll_event evs[EVENTS];
  for (int round = 0; round < ROUNDS_PER_WAKEUP; round++) {
    s->waits++;
    int n = epoll_wait(s->epfd, evs, EVENTS, 0);
    if (n == 0) s->drained = s->waits;
    if (n <= 0) break;
    for (int i = 0; i < n && !s->closing; i++) {
      uint32_t slot = (uint32_t)evs[i].data.u64;
      if (slot == LISTEN_TAG) {
        conn_accept(s);
        continue;
      }
      if (slot & UP_TAG) {
        up_t *u = &s->ups[slot & ~UP_TAG];
        if (u->fd >= 0 && u->gen == (uint32_t)(evs[i].data.u64 >> 32)) up_event(s, u, evs[i].events);
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
    if (n < EVENTS) s->drained = s->waits;
    if (s->closing) return;
    dispatch(s);
    if (s->closing) return;
    pump(s);
    if (s->closing) return;
    if (n < EVENTS) break;
  }
  if (s->ndone > 0) dispatch(s); // completions of this wake-up with no request to carry them
}

// ---- lifetime ---------------------------------------------------------------------------------------------------

static void release(front_t *s) {
  napi_env env = s->env;
  napi_ref refs[] = {s->cb, s->rx_ref, s->meta_ref, s->tx_ref, s->done_ref};
  for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
    if (refs[i]) napi_delete_reference(env, refs[i]);
  if (s->actx) napi_async_destroy(env, s->actx);
  s->cb = s->rx_ref = s->meta_ref = s->tx_ref = s->done_ref = NULL;
  s->actx = NULL;
}

static void free_front(front_t *s) {
  if (s->conns) {
    for (uint32_t i = 0; i < s->max_conns; i++) {
      if (s->conns[i].fd >= 0) close(s->conns[i].fd);
      free(s->conns[i].rbuf);
      free(s->conns[i].wbuf);
      free(s->conns[i].fwd);
    }
  }
  if (s->ups) {
    for (uint32_t i = 0; i < s->max_ups; i++) {
      if (s->ups[i].fd >= 0) close(s->ups[i].fd);
      free(s->ups[i].buf);
      free(s->ups[i].hold);
    }
  }
  if (s->origins)
    for (uint32_t i = 0; i < s->norigins; i++) free(s->origins[i].wq);
  free(s->ups);
  free(s->free_ups);
  free(s->origins);
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
  uint32_t max_ups = get_u32(env, o, "maxOriginConnections");
  bool reuse = false, peek_always = false, fail_to_js = false;
  napi_get_value_bool(env, get_prop(env, o, "reusePort"), &reuse);
  napi_get_value_bool(env, get_prop(env, o, "peekEveryReuse"), &peek_always);
  napi_get_value_bool(env, get_prop(env, o, "failToJs"), &fail_to_js);
  void *done = NULL;
  size_t done_len = 0;
  napi_value donev = get_prop(env, o, "done");
  if (!get_bytes(env, donev, &done, &done_len)) done = NULL;
  void *rx, *meta, *tx;
  size_t rx_len, meta_len, tx_len;
  napi_value rxv = get_prop(env, o, "rx"), metav = get_prop(env, o, "meta"), txv = get_prop(env, o, "tx");
  if (batch == 0 || batch > 4096 || max == 0 || max > 1000000 || max_ups > 1000000 || port > 65535 || !get_bytes(env, rxv, &rx, &rx_len) ||
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
  s->max_ups = max_ups;
  s->peek_always = peek_always;
  s->fail_to_js = fail_to_js;
  s->done = done;
  s->done_max = (uint32_t)(done_len / (D_FIELDS * 4));
  s->ups = calloc(max_ups ? max_ups : 1, sizeof *s->ups);
  s->free_ups = malloc((max_ups ? max_ups : 1) * sizeof *s->free_ups);
  s->origins = calloc(MAX_ORIGINS, sizeof *s->origins);
  if (!s->conns || !s->free_slots || !s->ready || !s->ready_b || !s->ups || !s->free_ups || !s->origins) {
    close(lfd);
    close(epfd);
    free(s->conns);
    free(s->free_slots);
    free(s->ready);
    free(s->ready_b);
    free(s->ups);
    free(s->free_ups);
    free(s->origins);
    free(s);
    napi_throw_error(env, NULL, "http-front: out of memory");
    return NULL;
  }
  for (uint32_t i = 0; i < max; i++) {
    s->conns[i].fd = -1;
    s->conns[i].up = NONE;
    s->free_slots[i] = max - 1 - i;
  }
  s->nfree = max;
  for (uint32_t i = 0; i < max_ups; i++) {
    s->ups[i].fd = -1;
    s->ups[i].client = NONE;
    s->free_ups[i] = max_ups - 1 - i;
  }
  s->nfree_ups = max_ups;
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = LISTEN_TAG};
  epoll_ctl(epfd, EPOLL_CTL_ADD, lfd, &ev);

  napi_value resource_name;
  CHECK(napi_create_reference(env, argv[1], 1, &s->cb));
  CHECK(napi_create_reference(env, rxv, 1, &s->rx_ref));
  CHECK(napi_create_reference(env, metav, 1, &s->meta_ref));
  CHECK(napi_create_reference(env, txv, 1, &s->tx_ref));
  if (done) CHECK(napi_create_reference(env, donev, 1, &s->done_ref));
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

/**
 * After respond(), forward() or cancel() from JavaScript outside a batch's call: what they made ready (pipelined
 * requests, completion records) is handled on the loop's next turn.
 */
static void after_call(front_t *s) {
  if (s->in_dispatch == 0 && s->nready > 0 && !s->idling) {
    s->idling = true;
    uv_idle_start(&s->idle, on_idle);
  }
  schedule_flush(s);
}

static front_t *front_of(napi_env env, napi_value v) {
  void *data = NULL;
  if (napi_get_value_external(env, v, &data) != napi_ok) return NULL;
  front_t *s = data;
  return s && !s->closing ? s : NULL;
}

/**
 * respond(handle, slot, gen, bytes, close?) → boolean: answers a request left waiting (M_TX_LEN 0) after its batch
 * (`close`: then closes the connection; no bytes: closes it now); false when its connection is gone or has no request
 * waiting.
 */
static napi_value js_respond(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5], out;
  bool ok = false, close_after = false;
  uint32_t slot = 0, gen = 0;
  void *data;
  size_t len;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc >= 4) {
    if (argc == 5) napi_get_value_bool(env, argv[4], &close_after);
    front_t *s = front_of(env, argv[0]);
    if (s && napi_get_value_uint32(env, argv[1], &slot) == napi_ok &&
        napi_get_value_uint32(env, argv[2], &gen) == napi_ok && get_bytes(env, argv[3], &data, &len) &&
        slot < s->max_conns) {
      conn_t *c = &s->conns[slot];
      if (c->fd >= 0 && c->gen == gen && c->waiting && c->up == NONE && !c->awaiting) {
        ok = true;
        if (len == 0) conn_close(s, c); // nothing to answer with: the connection is closed
        else {
          if (close_after) c->close_after = true;
          conn_answered(s, c, data, len);
        }
        after_call(s);
      }
    }
  }
  napi_get_boolean(env, ok, &out);
  return out;
}

/** addOrigin(handle, host, port, poolSize) → the origin's index (for M_ORIGIN and forward()). */
static napi_value js_add_origin(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4], out;
  char host[64] = {0};
  size_t host_len;
  uint32_t port = 0, pool = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 4) return NULL;
  front_t *s = front_of(env, argv[0]);
  if (!s || napi_get_value_string_utf8(env, argv[1], host, sizeof host, &host_len) != napi_ok ||
      napi_get_value_uint32(env, argv[2], &port) != napi_ok || napi_get_value_uint32(env, argv[3], &pool) != napi_ok ||
      port == 0 || port > 65535 || pool == 0) {
    napi_throw_type_error(env, NULL, "addOrigin(handle, host, port 1..65535, poolSize > 0)");
    return NULL;
  }
  if (s->norigins == MAX_ORIGINS) {
    napi_throw_range_error(env, NULL, "http-front: too many origins");
    return NULL;
  }
  origin_t *o = &s->origins[s->norigins];
  memset(o, 0, sizeof *o);
  struct sockaddr_in *a4 = (struct sockaddr_in *)&o->addr;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&o->addr;
  if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    o->addr_len = sizeof *a4;
  } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    o->addr_len = sizeof *a6;
  } else {
    napi_throw_type_error(env, NULL, "addOrigin: host must be an IPv4 or IPv6 address");
    return NULL;
  }
  if (!(o->wq = malloc(2 * MAX_WAITERS * sizeof *o->wq))) {
    napi_throw_error(env, NULL, "http-front: out of memory");
    return NULL;
  }
  o->max = pool;
  o->idle_head = o->idle_tail = NONE;
  napi_create_uint32(env, s->norigins++, &out);
  return out;
}

/**
 * forward(handle, slot, gen, origin, head, add?, dropLen?) → boolean: forwards a request left waiting (M_TX_LEN 0)
 * after its batch; `add`: lines to add to the answer's head, after `dropLen` bytes of names to drop (M_DROP_LEN).
 */
static napi_value js_forward(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7], out;
  bool ok = false;
  uint32_t slot = 0, gen = 0, drop_len = 0;
  int32_t origin = -1;
  void *data, *add = NULL;
  size_t len, add_len = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc >= 5) {
    if (argc >= 6 && !get_bytes(env, argv[5], &add, &add_len)) add_len = 0;
    if (argc == 7) napi_get_value_uint32(env, argv[6], &drop_len);
    front_t *s = front_of(env, argv[0]);
    if (s && napi_get_value_uint32(env, argv[1], &slot) == napi_ok &&
        napi_get_value_uint32(env, argv[2], &gen) == napi_ok && napi_get_value_int32(env, argv[3], &origin) == napi_ok &&
        get_bytes(env, argv[4], &data, &len) && slot < s->max_conns) {
      conn_t *c = &s->conns[slot];
      if (c->fd >= 0 && c->gen == gen && c->waiting && c->up == NONE && !c->awaiting) {
        ok = true;
        forward(s, c, origin, data, len, add, add_len, drop_len);
        after_call(s);
      }
    }
  }
  napi_get_boolean(env, ok, &out);
  return out;
}

/**
 * cancel(handle, slot, gen) → boolean: a forwarded request whose answer's head has not come (its origin connection is
 * closed, or its place in the origin's queue given up) ends as origin-timeout (handed back to JavaScript with
 * failToJs, else 502); false when there is no such request (its head came, or it is not forwarded).
 */
static napi_value js_cancel(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3], out;
  bool ok = false;
  uint32_t slot = 0, gen = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) == napi_ok && argc == 3) {
    front_t *s = front_of(env, argv[0]);
    if (s && napi_get_value_uint32(env, argv[1], &slot) == napi_ok &&
        napi_get_value_uint32(env, argv[2], &gen) == napi_ok && slot < s->max_conns) {
      conn_t *c = &s->conns[slot];
      if (c->fd >= 0 && c->gen == gen && c->waiting) {
        if (c->awaiting) {
          c->awaiting = false;
          ok = true;
          client_fail(s, c, E_TIMEOUT, NULL);
        } else if (c->up != NONE && !s->ups[c->up].parsed) {
          up_t *u = &s->ups[c->up];
          uint32_t oi = u->origin;
          ok = true;
          c->up = NONE;
          client_fail(s, c, E_TIMEOUT, u);
          up_close(s, u, false);
          origin_next(s, oi);
        }
        after_call(s);
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
  napi_create_function(env, "addOrigin", NAPI_AUTO_LENGTH, js_add_origin, NULL, &f);
  napi_set_named_property(env, exports, "addOrigin", f);
  napi_create_function(env, "forward", NAPI_AUTO_LENGTH, js_forward, NULL, &f);
  napi_set_named_property(env, exports, "forward", f);
  napi_create_function(env, "cancel", NAPI_AUTO_LENGTH, js_cancel, NULL, &f);
  napi_set_named_property(env, exports, "cancel", f);
  napi_create_function(env, "close", NAPI_AUTO_LENGTH, js_close, NULL, &f);
  napi_set_named_property(env, exports, "close", f);
  set_u32(env, exports, "META_FIELDS", META_FIELDS);
  set_u32(env, exports, "MAX_HEAD", MAX_HEAD);
  set_u32(env, exports, "MAX_FIELDS", MAX_FIELDS);
  set_u32(env, exports, "DONE_FIELDS", D_FIELDS);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
