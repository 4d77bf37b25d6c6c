// The edge's HTTP/1.1 origin client in C, on Node's own event loop (libuv): keep-alive pools per origin address,
// one request per connection at a time (no pipelining), a request written as one pre-encoded head (+ body), and a
// response parser that reads only the framing (Content-Length, chunked, close-delimited, HEAD/204/304, 1xx skipped)
// and hands JavaScript the status, the raw head as one latin1 string with the header offsets in a shared Int32Array,
// and the body bytes of each read in one Buffer: one call into JavaScript per read of the socket.
//
// It is the native twin of edge-node/src/proxy/origin-client/ (the TypeScript client, its reference): the same
// strict reading (bare LF, lone CR, obs-fold, duplicate or malformed Content-Length, any Transfer-Encoding but one
// `chunked`, both framings, oversized heads, bad chunk lines are refused), the same rules of reuse (never a request on
// a connection the origin closed or announced it will close), the same keep-alive race retry (an idempotent request
// without a body that fails on a reused connection before any byte of its answer goes once more on a new one) and the
// same error codes. Everything runs on the main thread: no locks, no thread-safe functions. Nothing here calls
// JavaScript while JavaScript is calling in: failures found during a call from JavaScript are reported from a timer.
#include <node_api.h>
#include <uv.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HEAD 16384
#define MAX_LINES 256
#define MAX_INTERIM 8
#define MAX_CHUNK_LINE 4096
#define MAX_CHUNK_DIGITS 13
#define DEFAULT_IDLE_MS 30000
#define UNREPLAYABLE_IDLE_MS 1000
#define READ_SIZE 65536
/** Request body bytes queued in the socket before JavaScript is asked to wait. */
#define BODY_HIGH_WATER 65536
#define META_LEN (3 + 4 * MAX_LINES)
/* meta[BODY_AT]: the offset in the read buffer of the body bytes a callback was given by length. */
#define BODY_AT META_LEN

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

enum { C_CONNECTING, C_IDLE, C_HEAD, C_BODY, C_CLOSED };
enum { FR_NONE, FR_LENGTH, FR_CHUNKED, FR_CLOSE };
enum { CH_SIZE, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILERS };
/* F_FORWARD: JavaScript forwards the answer's head; the head callback also gets its forwardable lines (forward_lines). */
enum { F_HEAD = 1, F_RETRIABLE = 2, F_BODY = 4, F_CHUNKED_BODY = 8, F_FORWARD = 16 };

typedef struct pool pool_t;
typedef struct conn conn_t;
typedef struct oreq oreq_t;

/** A chunk of request body bytes queued until the request has a connection. */
typedef struct bchunk {
  struct bchunk *next;
  size_t len;
  int last;
  char data[];
} bchunk_t;

struct oreq {
  int32_t id;
  char *head;
  size_t head_len;
  size_t head_cap; /* bytes allocated at head (kept with the request on the free list) */
  int flags;
  int retried;
  uint32_t headers_ms, body_ms;
  pool_t *pool;
  conn_t *conn;
  oreq_t *qnext;
  int queued;
  /* Request body (F_BODY): chunks given before the connection, bytes written, whether the last one came. */
  bchunk_t *bhead, *btail;
  int64_t declared; /* Content-Length of the body, -1: chunked */
  int64_t bsent;
  int bdone;
  int bwaiting; /* JavaScript was told to wait (write returned false): onDrain tells it to go on */
};

struct conn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_connect_t connect_req;
  pool_t *pool;
  oreq_t *req;
  int state;
  int busy;    /* counted in pool->busy */
  int handles; /* uv handles not yet closed */
  int reading;
  int paused;
  int pending_err; /* a failure to report from the timer (found during a call from JavaScript) */
  int drain_pending; /* onDrain to call from the timer */
  uint64_t idle_since, activity, deadline;
  /* When the timer is due (conn_timer) and when libuv's timer is set to fire (0: not set): see conn_timer. */
  uint64_t due, armed;
  uint32_t uses;
  int answering, reusable, interim;
  int wfailed; /* the origin went away under a write: nothing more is written, the read side judges the request */
  int64_t idle_ms;
  int framing, chunk;
  uint64_t remaining;
  size_t trailer_bytes;
  char *hbuf;
  size_t hlen, hcap;
  char *lbuf;
  size_t llen, lcap;
  char *tbuf;
  size_t tlen, tcap;
  size_t queued_bytes; /* request body bytes handed to uv_write not yet written */
  conn_t *prev, *next;   /* idle list */
};

struct pool {
  int32_t id;
  struct sockaddr_storage addr;
  int max_conn, max_idle;
  uint32_t connect_ms;
  int busy, nidle, nconns, closed;
  int nreqs; /* requests alive that name this pool */
  conn_t *idle_first, *idle_last; /* most recently used last */
  oreq_t *qhead, *qtail;
};

static napi_env g_env = NULL;
static uv_loop_t *g_loop;
static napi_ref r_on_head, r_on_data, r_on_error, r_on_drain, r_meta, r_resource;
static napi_async_context g_actx;
static int32_t *g_meta;
/* The read buffer is a Buffer JavaScript holds (made by init): a body lying in it is handed over as its offset and
 * length, and JavaScript reads it through a view during the call (no copy, no allocation per read). */
static char *g_rbuf;
static napi_ref r_rbuf;
static char *g_scratch;
static size_t g_scratch_cap;
/* The forwardable lines of the last head (forward_lines), at FWD_AT of a Buffer JavaScript holds (given to init): the
 * bytes before FWD_AT are JavaScript's, for the status line it writes in front of the lines (one block for uWS's
 * writeStatus, no string made). */
#define FWD_AT 64
static char *g_fwd;
static size_t g_fwd_cap;
static napi_ref r_fwd;

static oreq_t **g_reqs;
static size_t g_reqs_cap;
static pool_t **g_pools;
static size_t g_pools_cap;

/* ---- small helpers ------------------------------------------------------------------------------------------ */

static int grow(char **buf, size_t *cap, size_t need) {
  if (need <= *cap) return 1;
  size_t n = *cap ? *cap : 256;
  while (n < need) n *= 2;
  char *p = realloc(*buf, n);
  if (!p) return 0;
  *buf = p;
  *cap = n;
  return 1;
}

static int append(char **buf, size_t *len, size_t *cap, const char *data, size_t n) {
  if (!grow(buf, cap, *len + n)) return 0;
  memcpy(*buf + *len, data, n);
  *len += n;
  return 1;
}

static unsigned char TCHAR[256];
static unsigned char FIELD[256];

static void init_tables(void) {
  const char *t = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  for (const char *p = t; *p; p++) TCHAR[(unsigned char)*p] = 1;
  for (int c = 32; c < 256; c++) FIELD[c] = c == 127 ? 0 : 1;
  FIELD[9] = 1;
}

static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c | 0x20 : c; }

static int eq_name(const char *p, size_t n, const char *lc) {
  size_t l = strlen(lc);
  if (n != l) return 0;
  for (size_t i = 0; i < n; i++)
    if (lower((unsigned char)p[i]) != lc[i]) return 0;
  return 1;
}

static int64_t parse_decimal(const char *p, size_t n) {
  if (n == 0 || n > 15) return -1;
  int64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned d = (unsigned char)p[i] - '0';
    if (d > 9) return -1;
    v = v * 10 + d;
  }
  return v;
}

static int is_ows(int c) { return c == ' ' || c == '\t'; }

/* ---- calls into JavaScript ---------------------------------------------------------------------------------- */

static napi_value call_js(napi_ref ref, size_t argc, napi_value *argv) {
  napi_value fn, recv, result = NULL;
  napi_get_reference_value(g_env, ref, &fn);
  napi_get_reference_value(g_env, r_resource, &recv); /* make_callback wants an object as `this` */
  napi_status s = napi_make_callback(g_env, g_actx, recv, fn, argc, argv, &result);
  if (s != napi_ok) {
    bool pending = false;
    napi_is_exception_pending(g_env, &pending);
    if (pending) {
      napi_value e;
      napi_get_and_clear_last_exception(g_env, &e);
      napi_fatal_exception(g_env, e);
    }
    return NULL;
  }
  return result;
}

static napi_value js_int(int64_t v) {
  napi_value out;
  napi_create_int64(g_env, v, &out);
  return out;
}

static napi_value js_str(const char *s, size_t n) {
  napi_value out;
  napi_create_string_latin1(g_env, s, n, &out);
  return out;
}

static napi_value js_undef(void) {
  napi_value out;
  napi_get_undefined(g_env, &out);
  return out;
}

/* ---- requests and pools ------------------------------------------------------------------------------------- */

static void pool_maybe_free(pool_t *p);

/* Freed requests kept for the next ones (linked by qnext, their head buffers with them): no malloc or free per
 * request. At most FREE_REQS are kept, and a head buffer over FREE_HEAD_MAX bytes is not. */
#define FREE_REQS 512
#define FREE_HEAD_MAX 16384
static oreq_t *g_free_reqs;
static int g_nfree_reqs;

/** A zeroed request whose head buffer holds at least `len` bytes (reused from the free list when there is one). */
static oreq_t *req_alloc(size_t len) {
  oreq_t *r = g_free_reqs;
  char *head = NULL;
  size_t cap = 0;
  if (r) {
    g_free_reqs = r->qnext;
    g_nfree_reqs--;
    head = r->head;
    cap = r->head_cap;
    memset(r, 0, sizeof *r);
  } else if (!(r = calloc(1, sizeof(oreq_t))))
    return NULL;
  if (cap < len) {
    free(head);
    cap = len < 512 ? 512 : len;
    if (!(head = malloc(cap))) {
      free(r);
      return NULL;
    }
  }
  r->head = head;
  r->head_cap = cap;
  return r;
}

static void req_free(oreq_t *r) {
  if (r->id >= 0 && (size_t)r->id < g_reqs_cap && g_reqs[r->id] == r) g_reqs[r->id] = NULL;
  pool_t *p = r->pool;
  bchunk_t *b = r->bhead;
  while (b) {
    bchunk_t *n = b->next;
    free(b);
    b = n;
  }
  if (g_nfree_reqs < FREE_REQS && r->head_cap <= FREE_HEAD_MAX) {
    r->qnext = g_free_reqs;
    r->id = -1;
    r->pool = NULL;
    r->conn = NULL;
    g_free_reqs = r;
    g_nfree_reqs++;
  } else {
    free(r->head);
    free(r);
  }
  if (p) {
    p->nreqs--;
    pool_maybe_free(p);
  }
}

/** Tells JavaScript the request failed, then frees it. */
static void req_error(oreq_t *r, const char *code, const char *msg) {
  int32_t id = r->id;
  req_free(r);
  napi_handle_scope scope;
  napi_open_handle_scope(g_env, &scope);
  napi_value argv[3] = {js_int(id), js_str(code, strlen(code)), js_str(msg, strlen(msg))};
  call_js(r_on_error, 3, argv);
  napi_close_handle_scope(g_env, scope);
}

static void queue_push(pool_t *p, oreq_t *r, int front) {
  r->queued = 1;
  if (front) {
    r->qnext = p->qhead;
    p->qhead = r;
    if (!p->qtail) p->qtail = r;
  } else {
    r->qnext = NULL;
    if (p->qtail) p->qtail->qnext = r;
    else p->qhead = r;
    p->qtail = r;
  }
}

static oreq_t *queue_pop(pool_t *p) {
  oreq_t *r = p->qhead;
  if (!r) return NULL;
  p->qhead = r->qnext;
  if (!p->qhead) p->qtail = NULL;
  r->qnext = NULL;
  r->queued = 0;
  return r;
}

static void queue_remove(pool_t *p, oreq_t *r) {
  oreq_t **pp = &p->qhead, *prev = NULL;
  while (*pp && *pp != r) {
    prev = *pp;
    pp = &(*pp)->qnext;
  }
  if (!*pp) return;
  *pp = r->qnext;
  if (p->qtail == r) p->qtail = prev;
  r->qnext = NULL;
  r->queued = 0;
}

static void pool_maybe_free(pool_t *p) {
  if (!p->closed || p->nconns > 0 || p->nreqs > 0) return;
  if (p->id >= 0 && (size_t)p->id < g_pools_cap && g_pools[p->id] == p) g_pools[p->id] = NULL;
  free(p);
}

static void idle_remove(conn_t *c) {
  pool_t *p = c->pool;
  if (c->prev) c->prev->next = c->next;
  else p->idle_first = c->next;
  if (c->next) c->next->prev = c->prev;
  else p->idle_last = c->prev;
  c->prev = c->next = NULL;
  p->nidle--;
}

static void conn_start(conn_t *c, oreq_t *r);
static void pool_dispatch(pool_t *p, oreq_t *r);
static void conn_open(pool_t *p, oreq_t *r);

/** A connection went away or a request left: a waiting request gets a connection. */
static void pool_next(pool_t *p) {
  while (p->qhead && p->busy < p->max_conn) {
    oreq_t *r = queue_pop(p);
    pool_dispatch(p, r);
  }
}

static void on_close(uv_handle_t *h) {
  conn_t *c = (conn_t *)h->data;
  if (--c->handles == 0) {
    free(c->hbuf);
    free(c->lbuf);
    free(c->tbuf);
    free(c);
  }
}

/** Closes the connection for good (its request, if any, is the caller's to report). */
static void conn_destroy(conn_t *c) {
  if (c->state == C_CLOSED) return;
  pool_t *p = c->pool;
  int was_busy = c->busy;
  if (c->state == C_IDLE) idle_remove(c);
  if (c->busy) {
    c->busy = 0;
    p->busy--;
  }
  c->state = C_CLOSED;
  c->req = NULL;
  uv_timer_stop(&c->timer);
  c->armed = 0;
  if (c->reading) uv_read_stop((uv_stream_t *)&c->tcp);
  c->reading = 0;
  uv_close((uv_handle_t *)&c->tcp, on_close);
  uv_close((uv_handle_t *)&c->timer, on_close);
  p->nconns--;
  if (was_busy) pool_next(p);
  pool_maybe_free(p);
}

static void on_timer(uv_timer_t *t);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/**
 * Sets the connection's timer to `ms` from now. libuv's timer is moved only when it would fire later than that: one
 * set to fire earlier (an earlier timeout, longer than the next one) fires, finds the time not come and is set again
 * for the rest (on_timer). So the timeouts of a request and of the idle connection after it (head, body, keep-alive)
 * cost no libuv timer-heap operation per request, where a start and a stop each were a removal and an insertion.
 */
static void conn_timer(conn_t *c, uint64_t ms) {
  c->due = uv_now(g_loop) + ms;
  if (c->armed != 0 && c->armed <= c->due) return;
  c->armed = c->due;
  uv_timer_start(&c->timer, on_timer, ms, 0);
}
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void conn_read(conn_t *c) {
  if (!c->reading && c->state != C_CLOSED) {
    c->reading = 1;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  }
}

/** The request on `c` is over: the connection goes idle (or serves a waiting request) or is closed. */
static void conn_release(conn_t *c) {
  pool_t *p = c->pool;
  c->req = NULL;
  c->paused = 0;
  c->hlen = c->llen = c->tlen = 0;
  if (!c->reusable || p->closed) {
    conn_destroy(c);
    return;
  }
  oreq_t *next = queue_pop(p);
  if (next) {
    conn_start(c, next);
    return;
  }
  if (p->nidle >= p->max_idle) {
    conn_destroy(c);
    return;
  }
  c->busy = 0;
  p->busy--;
  c->state = C_IDLE;
  c->idle_since = uv_now(g_loop);
  c->prev = p->idle_last;
  c->next = NULL;
  if (p->idle_last) p->idle_last->next = c;
  else p->idle_first = c;
  p->idle_last = c;
  p->nidle++;
  conn_read(c); /* a FIN or any byte while idle closes it */
  conn_timer(c, (uint64_t)c->idle_ms);
}

/**
 * Fails the request in flight (if any) and closes the connection; a retriable request that failed on a reused
 * connection before any byte of its answer goes once more on a new one.
 */
static void conn_fail(conn_t *c, const char *code, const char *msg) {
  oreq_t *r = c->req;
  pool_t *p = c->pool;
  int answering = c->answering;
  uint32_t uses = c->uses;
  c->req = NULL;
  conn_destroy(c);
  if (!r) return;
  r->conn = NULL;
  if ((r->flags & F_RETRIABLE) && !r->retried && !answering && uses > 1 &&
      (!strcmp(code, "ECONNRESET") || !strcmp(code, "EPIPE") || !strcmp(code, "EDGE_ORIGIN_CLOSED"))) {
    r->retried = 1;
    if (p->busy < p->max_conn) conn_open(p, r);
    else queue_push(p, r, 1);
    return;
  }
  req_error(r, code, msg);
}

/**
 * Fails with a libuv error worded as Node words a socket's ("connect ECONNREFUSED", "read ECONNRESET", "write
 * ENOBUFS"): upstream.ts isConnectFailure reads the first word, so only a failure while connecting says "connect".
 */
static void conn_fail_uv(conn_t *c, int err, const char *op) {
  char msg[64];
  snprintf(msg, sizeof msg, "%s %s", c->state == C_CONNECTING ? "connect" : op, uv_err_name(err));
  conn_fail(c, uv_err_name(err), msg);
}

/** A failure found during a call from JavaScript: reported from the connection's timer. */
static void conn_fail_later(conn_t *c, int err) {
  c->pending_err = err;
  conn_timer(c, 0);
}

/* ---- writing ------------------------------------------------------------------------------------------------ */

typedef struct {
  uv_write_t w;
  conn_t *conn;
  oreq_t *req;
  size_t len;
  char data[];
} wreq_t;

static void notify_drain(oreq_t *r) {
  r->bwaiting = 0;
  napi_handle_scope scope;
  napi_open_handle_scope(g_env, &scope);
  napi_value argv[1] = {js_int(r->id)};
  call_js(r_on_drain, 1, argv);
  napi_close_handle_scope(g_env, scope);
}

/**
 * A write failed because the origin closed or reset the connection. Its answer may still be in the socket's receive
 * buffer (Python's http.server answers a POST it does not handle and closes without reading the body): the request
 * is judged by what is read (the answer, or EOF or a reset failing it), never by the write alone.
 */
static int peer_gone(int e) { return e == UV_EPIPE || e == UV_ECONNRESET || e == UV_ENOTCONN || e == UV_ECONNABORTED; }

static void write_failed(conn_t *c) {
  c->wfailed = 1;
  c->reusable = 0;
}

static void on_write(uv_write_t *w, int status) {
  wreq_t *wr = (wreq_t *)w;
  conn_t *c = wr->conn;
  if (c->queued_bytes >= wr->len) c->queued_bytes -= wr->len;
  else c->queued_bytes = 0;
  if (c->state != C_CLOSED && status == 0 && c->req && c->req == wr->req && c->req->bwaiting &&
      c->queued_bytes < BODY_HIGH_WATER) {
    oreq_t *r = c->req;
    free(wr);
    notify_drain(r);
    return;
  }
  free(wr);
  if (status < 0 && status != UV_ECANCELED && c->state != C_CLOSED && c->req) {
    if (!peer_gone(status)) {
      conn_fail_uv(c, status, "write");
      return;
    }
    write_failed(c);
    /* Whatever JavaScript still gives of the body is dropped: it need not wait. */
    if (c->req->bwaiting && c->queued_bytes < BODY_HIGH_WATER) notify_drain(c->req);
  }
}

/**
 * Writes the pieces in order (tries at once, in one writev; the rest is copied and queued in one write request).
 * Returns 0 or a libuv error.
 */
static int conn_writev(conn_t *c, const uv_buf_t *bufs, unsigned nbufs) {
  if (c->wfailed) return 0;
  size_t len = 0;
  for (unsigned i = 0; i < nbufs; i++) len += bufs[i].len;
  size_t done = 0;
  if (c->queued_bytes == 0) {
    int n = uv_try_write((uv_stream_t *)&c->tcp, bufs, nbufs);
    if (n >= 0) done = (size_t)n;
    else if (peer_gone(n)) {
      write_failed(c);
      return 0;
    } else if (n != UV_EAGAIN)
      return n;
  }
  if (done == len) return 0;
  size_t rest = len - done;
  wreq_t *wr = malloc(sizeof(wreq_t) + rest);
  if (!wr) return UV_ENOMEM;
  wr->conn = c;
  wr->req = c->req;
  wr->len = rest;
  size_t at = 0, skip = done; // the pieces past the `done` bytes the socket took
  for (unsigned i = 0; i < nbufs; i++) {
    if (skip >= bufs[i].len) {
      skip -= bufs[i].len;
      continue;
    }
    memcpy(wr->data + at, bufs[i].base + skip, bufs[i].len - skip);
    at += bufs[i].len - skip;
    skip = 0;
  }
  uv_buf_t rb = uv_buf_init(wr->data, (unsigned)rest);
  int e = uv_write(&wr->w, (uv_stream_t *)&c->tcp, &rb, 1, on_write);
  if (e < 0) {
    free(wr);
    if (peer_gone(e)) {
      write_failed(c);
      return 0;
    }
    return e;
  }
  c->queued_bytes += rest;
  return 0;
}

static int conn_write(conn_t *c, const char *data, size_t len) {
  uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
  return conn_writev(c, &b, 1);
}

/**
 * Writes one chunk of the request body in its framing, after pre[0, pre_len) (the request's head, when the chunk came
 * before the connection), in one writev: not one write per piece of the chunked framing. Returns 0 or a libuv error.
 */
static int body_write(conn_t *c, oreq_t *r, const char *pre, size_t pre_len, const char *data, size_t len, int last) {
  uv_buf_t b[5];
  unsigned n = 0;
  char line[24];
  if (pre_len > 0) b[n++] = uv_buf_init((char *)pre, (unsigned)pre_len);
  if (r->declared < 0) {
    if (len > 0) {
      int k = snprintf(line, sizeof line, "%zx\r\n", len);
      b[n++] = uv_buf_init(line, (unsigned)k);
      b[n++] = uv_buf_init((char *)data, (unsigned)len);
      b[n++] = uv_buf_init("\r\n", 2);
    }
    if (last) b[n++] = uv_buf_init("0\r\n\r\n", 5);
  } else if (len > 0)
    b[n++] = uv_buf_init((char *)data, (unsigned)len);
  int e = n > 0 ? conn_writev(c, b, n) : 0;
  r->bsent += (int64_t)len;
  if (last) r->bdone = 1;
  return e;
}

/** Writes `r` on `c` and waits for its answer. */
static void conn_start(conn_t *c, oreq_t *r) {
  c->req = r;
  r->conn = c;
  c->state = C_HEAD;
  c->uses++;
  c->answering = 0;
  c->reusable = 1;
  c->interim = 0;
  c->paused = 0;
  c->hlen = c->llen = c->tlen = 0;
  c->idle_ms = DEFAULT_IDLE_MS;
  c->activity = uv_now(g_loop);
  c->queued_bytes = 0;
  c->wfailed = 0;
  int e = 0;
  size_t pre_len = r->head_len; // the head goes out with the body's first chunk, if one came already
  if (r->flags & F_BODY) {
    /* What JavaScript gave before the connection: written now, in order. */
    bchunk_t *b = r->bhead;
    r->bhead = r->btail = NULL;
    while (b) {
      bchunk_t *n = b->next;
      if (e == 0) e = body_write(c, r, r->head, pre_len, b->data, b->len, b->last);
      pre_len = 0;
      free(b);
      b = n;
    }
  }
  if (pre_len > 0) e = conn_write(c, r->head, pre_len);
  conn_read(c);
  if (e < 0) {
    conn_fail_later(c, e);
    return;
  }
  /* The record's timeout runs from the end of the body: an upload takes what it takes, as long as it moves. */
  if (r->bdone) c->deadline = uv_now(g_loop) + r->headers_ms;
  else c->deadline = 0;
  if (r->bwaiting && c->queued_bytes < BODY_HIGH_WATER) {
    /* JavaScript waits for room that is there now: told from the timer (never during a call from it). */
    c->drain_pending = 1;
    conn_timer(c, 0);
    return;
  }
  conn_timer(c, r->bdone ? r->headers_ms : r->body_ms);
}

/* ---- connecting --------------------------------------------------------------------------------------------- */

static void on_connect(uv_connect_t *cr, int status) {
  conn_t *c = container_of(cr, conn_t, connect_req);
  if (c->state == C_CLOSED) return;
  if (status < 0) {
    if (status == UV_ECANCELED) return;
    conn_fail_uv(c, status, "connect");
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  oreq_t *r = c->req;
  if (!r) {
    /* Its request went away while connecting: the connection serves the next one. */
    c->reusable = 1;
    c->idle_ms = DEFAULT_IDLE_MS;
    conn_release(c);
    return;
  }
  conn_start(c, r);
}

/** Opens a new connection for `r`. */
static void conn_open(pool_t *p, oreq_t *r) {
  conn_t *c = calloc(1, sizeof(conn_t));
  if (!c) {
    queue_push(p, r, 1);
    return;
  }
  c->pool = p;
  c->state = C_CONNECTING;
  c->busy = 1;
  p->busy++;
  p->nconns++;
  c->req = r;
  r->conn = c;
  c->tcp.data = c;
  c->timer.data = c;
  uv_tcp_init(g_loop, &c->tcp);
  uv_timer_init(g_loop, &c->timer);
  c->handles = 2;
  int e = uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)&p->addr, on_connect);
  if (e < 0) {
    conn_fail_later(c, e);
    return;
  }
  conn_timer(c, p->connect_ms);
}

static void pool_dispatch(pool_t *p, oreq_t *r) {
  uint64_t now = uv_now(g_loop);
  while (p->idle_last) {
    conn_t *c = p->idle_last;
    idle_remove(c);
    c->busy = 1;
    p->busy++;
    if (!(r->flags & F_RETRIABLE) && now - c->idle_since > UNREPLAYABLE_IDLE_MS) {
      conn_destroy(c); /* may have been closed by the origin a moment ago: a new connection is safer */
      continue;
    }
    conn_start(c, r);
    return;
  }
  if (p->busy < p->max_conn) conn_open(p, r);
  else queue_push(p, r, 0);
}

/* ---- the timer ---------------------------------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t) {
  conn_t *c = (conn_t *)t->data;
  uint64_t now = uv_now(g_loop);
  c->armed = 0;
  if (now < c->due && !c->pending_err && !c->drain_pending) {
    /* Set to fire earlier than the timeout now due (conn_timer): again for the rest. */
    c->armed = c->due;
    uv_timer_start(&c->timer, on_timer, c->due - now, 0);
    return;
  }
  if (c->pending_err) {
    int e = c->pending_err;
    c->pending_err = 0;
    conn_fail_uv(c, e, "write");
    return;
  }
  oreq_t *r = c->req;
  if (c->drain_pending) {
    c->drain_pending = 0;
    if (r && r->bwaiting && c->state == C_HEAD) {
      conn_timer(c, 0); /* the checks below run on the next turn */
      notify_drain(r);
      return;
    }
  }
  switch (c->state) {
    case C_CONNECTING: {
      char msg[64];
      snprintf(msg, sizeof msg, "no connection within %u ms", c->pool->connect_ms);
      conn_fail(c, "EDGE_ORIGIN_CONNECT_TIMEOUT", msg);
      return;
    }
    case C_IDLE:
      conn_destroy(c);
      return;
    case C_HEAD:
      if (!r) return;
      if (c->deadline == 0) {
        /* The request body is still going out: it must move at least once per body timeout. */
        if (now - c->activity >= r->body_ms) {
          conn_fail(c, "EDGE_ORIGIN_HEADERS_TIMEOUT", "the request body stalled on its way to the origin");
          return;
        }
        conn_timer(c, c->activity + r->body_ms - now);
        return;
      }
      if (now >= c->deadline) {
        conn_fail(c, "EDGE_ORIGIN_HEADERS_TIMEOUT", "origin did not answer in time");
        return;
      }
      conn_timer(c, c->deadline - now);
      return;
    case C_BODY:
      if (!r) return;
      if (now - c->activity >= r->body_ms) {
        conn_fail(c, "EDGE_ORIGIN_BODY_TIMEOUT", "origin body timed out");
        return;
      }
      conn_timer(c, c->activity + r->body_ms - now);
      return;
  }
}

/* ---- parsing ------------------------------------------------------------------------------------------------ */

/** Finds CRLF CRLF in p[from, n): the index of its last LF, or -1. */
static ssize_t find_head_end(const char *p, size_t from, size_t n) {
  if (n < 4) return -1;
  for (size_t i = from; i + 3 < n; i++) {
    const char *q = memchr(p + i, '\r', n - 3 - i);
    if (!q) return -1;
    i = (size_t)(q - p);
    if (q[1] == '\n' && q[2] == '\r' && q[3] == '\n') return (ssize_t)(i + 3);
  }
  return -1;
}

/** An incomplete head p[0, n): refuses a bare LF (looked for from `from`) and a head past MAX_HEAD. */
static const char *check_partial_head(const char *p, size_t from, size_t n) {
  if (n > MAX_HEAD) return "response head too large";
  for (size_t i = from; i < n; i++)
    if (p[i] == '\n' && (i == 0 || p[i - 1] != '\r')) return "bare LF in the response head";
  return NULL;
}

typedef struct {
  int status, minor;
  int64_t content_length;
  int chunked, close;
  int64_t keep_alive_ms, keep_alive_max;
} head_t;

static void parse_keep_alive(const char *v, size_t n, head_t *h) {
  size_t i = 0;
  while (i <= n) {
    size_t e = i;
    while (e < n && v[e] != ',') e++;
    /* part v[i, e) */
    size_t eq = i;
    while (eq < e && v[eq] != '=') eq++;
    if (eq < e) {
      size_t ns = i, ne = eq, vs = eq + 1, ve = e;
      while (ns < ne && is_ows(v[ns])) ns++;
      while (ne > ns && is_ows(v[ne - 1])) ne--;
      while (vs < ve && is_ows(v[vs])) vs++;
      while (ve > vs && is_ows(v[ve - 1])) ve--;
      int64_t num = ve == vs ? 0 : parse_decimal(v + vs, ve - vs);
      if (num >= 0) {
        if (eq_name(v + ns, ne - ns, "timeout")) h->keep_alive_ms = num * 1000;
        else if (eq_name(v + ns, ne - ns, "max")) h->keep_alive_max = num;
      }
    }
    i = e + 1;
  }
}

static void parse_connection(const char *v, size_t n, head_t *h) {
  size_t i = 0;
  while (i <= n) {
    size_t e = i;
    while (e < n && v[e] != ',') e++;
    size_t s = i, t = e;
    while (s < t && is_ows(v[s])) s++;
    while (t > s && is_ows(v[t - 1])) t--;
    if (eq_name(v + s, t - s, "close")) h->close = 1;
    i = e + 1;
  }
}

/**
 * Parses the head p[0, end] (end: its final LF) into `h` and the offsets in g_meta: [header count, reason start,
 * reason end, then name start, name end, value start, value end per header]. Returns NULL or why it is refused.
 */
static const char *parse_head(const char *p, size_t end, head_t *h) {
  if (end + 1 > MAX_HEAD) return "response head too large";
  if (end < 14 || memcmp(p, "HTTP/1.", 7) != 0 || (p[7] != '0' && p[7] != '1') || p[8] != ' ')
    return "malformed status line";
  h->minor = p[7] - '0';
  int64_t st = parse_decimal(p + 9, 3);
  if (st < 100 || st > 599) return "malformed status code";
  h->status = (int)st;
  const char *lfp = memchr(p, '\n', end + 1);
  size_t lf = (size_t)(lfp - p);
  if (lf == 0 || p[lf - 1] != '\r') return "bare LF in the response head";
  g_meta[1] = 0;
  g_meta[2] = 0;
  if (lf - 1 > 12) {
    if (p[12] != ' ') return "malformed status line";
    for (size_t i = 13; i < lf - 1; i++)
      if (!FIELD[(unsigned char)p[i]]) return "control character in the status line";
    g_meta[1] = 13;
    g_meta[2] = (int32_t)(lf - 1);
  }
  h->content_length = -1;
  h->chunked = 0;
  h->close = h->minor == 0;
  h->keep_alive_ms = -1;
  h->keep_alive_max = -1;
  int lines = 0, saw_length = 0, saw_encoding = 0;
  for (;;) {
    size_t ls = lf + 1;
    const char *q = memchr(p + ls, '\n', end + 1 - ls);
    if (!q) return "malformed response head";
    lf = (size_t)(q - p);
    if (lf == ls || p[lf - 1] != '\r') return "bare LF in the response head";
    size_t le = lf - 1;
    if (le == ls) break; /* the empty line */
    if (++lines > MAX_LINES) return "too many response headers";
    if (is_ows(p[ls])) return "obs-fold in the response head";
    size_t colon = ls;
    while (colon < le && TCHAR[(unsigned char)p[colon]]) colon++;
    if (colon == ls || colon == le || p[colon] != ':') return "malformed header name";
    size_t vs = colon + 1, ve = le;
    for (size_t i = vs; i < ve; i++)
      if (!FIELD[(unsigned char)p[i]]) return "control character in a header";
    while (vs < ve && is_ows(p[vs])) vs++;
    while (ve > vs && is_ows(p[ve - 1])) ve--;
    int32_t *m = g_meta + 3 + 4 * (lines - 1);
    m[0] = (int32_t)ls;
    m[1] = (int32_t)colon;
    m[2] = (int32_t)vs;
    m[3] = (int32_t)ve;
    size_t nl = colon - ls;
    if (nl == 14 && eq_name(p + ls, nl, "content-length")) {
      if (saw_length) return "more than one Content-Length";
      saw_length = 1;
      h->content_length = parse_decimal(p + vs, ve - vs);
      if (h->content_length < 0) return "malformed Content-Length";
    } else if (nl == 17 && eq_name(p + ls, nl, "transfer-encoding")) {
      if (saw_encoding) return "more than one Transfer-Encoding";
      saw_encoding = 1;
      if (!eq_name(p + vs, ve - vs, "chunked")) return "Transfer-Encoding other than chunked";
      h->chunked = 1;
    } else if (nl == 10 && eq_name(p + ls, nl, "connection")) {
      parse_connection(p + vs, ve - vs, h);
    } else if (nl == 10 && eq_name(p + ls, nl, "keep-alive")) {
      parse_keep_alive(p + vs, ve - vs, h);
    }
  }
  if (lf != end) return "malformed response head";
  if (h->chunked && saw_length) return "both Content-Length and Transfer-Encoding";
  if (h->chunked && h->minor == 0) return "Transfer-Encoding in an HTTP/1.0 response";
  g_meta[0] = lines;
  return NULL;
}

static int hex_value(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  int l = c | 0x20;
  if (l >= 'a' && l <= 'f') return l - 'a' + 10;
  return -1;
}

/** A chunk-size line without its CRLF: 1*HEXDIG [ ";" extensions ]. Returns the size, -1 when malformed. */
static int64_t chunk_size(const char *p, size_t n) {
  size_t i = 0;
  int64_t v = 0;
  while (i < n) {
    int d = hex_value((unsigned char)p[i]);
    if (d < 0) break;
    if (i >= MAX_CHUNK_DIGITS) return -1;
    v = v * 16 + d;
    i++;
  }
  if (i == 0) return -1;
  if (i == n) return v;
  if (p[i] != ';') return -1; /* no whitespace before `;` (llhttp's reading, one reading only) */
  for (i++; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (TCHAR[c] || c == ';' || c == '=' || c == ' ' || c == '\t' || c == '"' || c == '\\' || c >= 0x80) continue;
    return -1;
  }
  return v;
}

/** Checks a trailer line and appends "name:value\r\n" (value trimmed) to the connection's trailers. */
static const char *take_trailer(conn_t *c, const char *p, size_t n) {
  size_t i = 0;
  while (i < n && TCHAR[(unsigned char)p[i]]) i++;
  if (i == 0 || i == n || p[i] != ':') return "malformed trailer";
  for (size_t j = i + 1; j < n; j++) {
    unsigned char ch = (unsigned char)p[j];
    if ((ch < 32 && ch != 9) || ch == 127) return "control character in a trailer";
  }
  size_t vs = i + 1, ve = n;
  while (vs < ve && is_ows(p[vs])) vs++;
  while (ve > vs && is_ows(p[ve - 1])) ve--;
  if (!append(&c->tbuf, &c->tlen, &c->tcap, p, i + 1) || !append(&c->tbuf, &c->tlen, &c->tcap, p + vs, ve - vs) ||
      !append(&c->tbuf, &c->tlen, &c->tcap, "\r\n", 2))
    return "out of memory";
  return NULL;
}

/**
 * Decodes chunked body bytes p[0, n) into g_scratch (at *out). Sets *done when the last chunk and its trailers are
 * in (bytes after them make the connection unusable). Returns NULL or why the body is refused.
 */
static const char *read_chunked(conn_t *c, const char *p, size_t n, size_t *out, int *done) {
  size_t i = 0;
  while (i < n && !*done) {
    switch (c->chunk) {
      case CH_SIZE:
      case CH_TRAILERS: {
        const char *q = memchr(p + i, '\n', n - i);
        size_t limit = c->chunk == CH_SIZE ? MAX_CHUNK_LINE : MAX_HEAD - c->trailer_bytes;
        if (!q) {
          if (c->llen + (n - i) > limit) return "chunk line too long";
          const char *cr = memchr(p + i, '\r', n - i);
          if ((cr && cr != p + n - 1) || (c->llen > 0 && memchr(c->lbuf, '\r', c->llen)))
            return "CR without LF in a chunk line";
          if (!append(&c->lbuf, &c->llen, &c->lcap, p + i, n - i)) return "out of memory";
          i = n;
          break;
        }
        size_t lf = (size_t)(q - p);
        const char *line = p + i;
        size_t len = lf - i; /* without the LF */
        if (c->llen > 0) {
          if (!append(&c->lbuf, &c->llen, &c->lcap, p + i, lf - i)) return "out of memory";
          line = c->lbuf;
          len = c->llen;
        }
        if (len == 0 || line[len - 1] != '\r') return "bare LF in a chunk line";
        len--; /* without the CR */
        if (memchr(line, '\r', len)) return "CR without LF in a chunk line";
        c->llen = 0;
        i = lf + 1;
        if (c->chunk == CH_SIZE) {
          if (len > MAX_CHUNK_LINE) return "chunk line too long";
          int64_t size = chunk_size(line, len);
          if (size < 0) return "invalid chunk size";
          if (size == 0) c->chunk = CH_TRAILERS;
          else {
            c->chunk = CH_DATA;
            c->remaining = (uint64_t)size;
          }
        } else {
          c->trailer_bytes += len + 2;
          if (c->trailer_bytes > MAX_HEAD) return "trailers too large";
          if (len == 0) {
            *done = 1;
            if (i < n) c->reusable = 0;
            return NULL;
          }
          if (is_ows(line[0])) return "obs-fold in the trailers";
          const char *err = take_trailer(c, line, len);
          if (err) return err;
        }
        break;
      }
      case CH_DATA: {
        size_t m = n - i;
        if ((uint64_t)m > c->remaining) m = (size_t)c->remaining;
        memcpy(g_scratch + *out, p + i, m);
        *out += m;
        c->remaining -= m;
        if (c->remaining == 0) c->chunk = CH_DATA_CR;
        i += m;
        break;
      }
      case CH_DATA_CR:
        if (p[i] != '\r') return "chunk data not followed by CRLF";
        c->chunk = CH_DATA_LF;
        i++;
        break;
      case CH_DATA_LF:
        if (p[i] != '\n') return "chunk data not followed by CRLF";
        c->chunk = CH_SIZE;
        i++;
        break;
    }
  }
  return NULL;
}

static void protocol_error(conn_t *c, const char *why) {
  char msg[160];
  snprintf(msg, sizeof msg, "invalid response from the origin: %s", why);
  conn_fail(c, "EDGE_ORIGIN_PROTOCOL", msg);
}

/**
 * Takes the body bytes p[0, n) of the answer in flight: the bytes for JavaScript in (body, blen), done set when the
 * answer is complete. Returns NULL or why the body is refused.
 */
static const char *take_body(conn_t *c, const char *p, size_t n, const char **body, size_t *blen, int *done) {
  *body = NULL;
  *blen = 0;
  switch (c->framing) {
    case FR_NONE:
      *done = 1;
      if (n > 0) c->reusable = 0;
      return NULL;
    case FR_LENGTH: {
      size_t m = n;
      if ((uint64_t)m > c->remaining) m = (size_t)c->remaining;
      c->remaining -= m;
      *body = p;
      *blen = m;
      if (c->remaining == 0) {
        *done = 1;
        if (m < n) c->reusable = 0; /* bytes after the answer: a smuggled second response, or a confused origin */
      }
      return NULL;
    }
    case FR_CLOSE:
      *body = p;
      *blen = n;
      return NULL;
    default: {
      if (!grow(&g_scratch, &g_scratch_cap, n ? n : 1)) return "out of memory";
      size_t out = 0;
      const char *err = read_chunked(c, p, n, &out, done);
      if (err) return err;
      *body = g_scratch;
      *blen = out;
      return NULL;
    }
  }
}

/** Header names a proxy does not pass on from an answer (hop-by-hop, its own framing, Date: forward.ts HOP_RESPONSE). */
static int hop_response(const char *n, size_t l) {
  switch (l) {
    case 2:
      return eq_name(n, l, "te");
    case 4:
      return eq_name(n, l, "date");
    case 7:
      return eq_name(n, l, "trailer") || eq_name(n, l, "upgrade");
    case 10:
      return eq_name(n, l, "connection") || eq_name(n, l, "keep-alive");
    case 14:
      return eq_name(n, l, "content-length");
    case 16:
      return eq_name(n, l, "proxy-connection");
    case 17:
      return eq_name(n, l, "transfer-encoding");
    default:
      return 0;
  }
}

/**
 * The lines of the head at p (offsets in g_meta, as parse_head left them) that a proxy passes on, each as
 * "\r\n" name ": " value with the name in lower case and the value trimmed: the bytes forward.ts would write for
 * the same list (names lower case, hop-by-hop and framing lines left out). In g_fwd; returns the length, or -1.
 */
static ssize_t forward_lines(const char *p, int *high) {
  size_t len = 0;
  int32_t n = g_meta[0];
  unsigned char any = 0;
  for (int32_t i = 0; i < n; i++) {
    const int32_t *m = g_meta + 3 + 4 * i;
    size_t nl = (size_t)(m[1] - m[0]), vl = (size_t)(m[3] - m[2]);
    if (hop_response(p + m[0], nl)) continue;
    if (len + nl + vl + 4 > g_fwd_cap) return -1;
    char *o = g_fwd + len;
    *o++ = '\r';
    *o++ = '\n';
    for (size_t k = 0; k < nl; k++) *o++ = (char)lower((unsigned char)p[m[0] + k]);
    *o++ = ':';
    *o++ = ' ';
    for (size_t k = 0; k < vl; k++) any |= (unsigned char)p[m[2] + k];
    memcpy(o, p + m[2], vl);
    len += nl + vl + 4;
  }
  *high = (any & 0x80) != 0;
  return (ssize_t)len;
}

/**
 * Hands JavaScript what one read brought: the head (when `head` is set: its text is p[0, head_len)), body bytes, and
 * completion. A complete answer releases the connection before JavaScript is called (a request it sends from the
 * callback may take it). Returns 0 when processing of this connection must stop.
 */
static int deliver(conn_t *c, oreq_t *r, int status, const char *head, size_t head_len, int64_t clen,
                   const char *body, size_t blen, int done) {
  napi_handle_scope scope;
  napi_open_handle_scope(g_env, &scope);
  int32_t id = r->id;
  /* Before conn_release: a request the callback sends may reuse the connection's buffers. */
  napi_value vfwd = NULL;
  if (head && (r->flags & F_FORWARD)) {
    /* Their length when every byte is ASCII (JavaScript reads them in the Buffer, during the call); as a string when
     * some byte is not (uWS writes a string's text as UTF-8, as it writes the header list's). */
    int high = 0;
    ssize_t fl = forward_lines(head, &high);
    vfwd = fl < 0 ? js_undef() : high ? js_str(g_fwd, (size_t)fl) : js_int((int64_t)fl);
  }
  napi_value vbody = js_undef(), vtrailers = js_undef();
  if (blen > 0) {
    if (body >= g_rbuf && body + blen <= g_rbuf + READ_SIZE) {
      /* In the read buffer: its length as a number, its offset in meta (JavaScript views it during the call). */
      g_meta[BODY_AT] = (int32_t)(body - g_rbuf);
      vbody = js_int((int64_t)blen);
    } else
      napi_create_buffer_copy(g_env, blen, body, NULL, &vbody);
  }
  if (done && c->tlen > 0) vtrailers = js_str(c->tbuf, c->tlen);
  napi_value vhead = head ? js_str(head, head_len) : NULL;
  if (done) {
    /* No timer stop: conn_release below sets the idle connection's timeout, or the next request's, or closes it. */
    /* An answer before the whole request body went out: the origin may still expect the rest. */
    if ((r->flags & F_BODY) && !r->bdone) c->reusable = 0;
    r->conn = NULL;
    conn_release(c);
    req_free(r);
  }
  napi_value result;
  if (head) {
    if (vfwd) {
      napi_value argv[8] = {js_int(id), js_int(status), vhead, vbody, js_int(done), vtrailers, vfwd, js_int(clen)};
      result = call_js(r_on_head, 8, argv);
    } else {
      napi_value argv[6] = {js_int(id), js_int(status), vhead, vbody, js_int(done), vtrailers};
      result = call_js(r_on_head, 6, argv);
    }
  } else {
    napi_value argv[4] = {js_int(id), vbody, js_int(done), vtrailers};
    result = call_js(r_on_data, 4, argv);
  }
  int go = 1;
  if (!done) {
    bool ok = true;
    if (result) napi_get_value_bool(g_env, result, &ok);
    if (c->state == C_CLOSED || c->req != r) go = 0; /* aborted from JavaScript */
    else if (!ok) {
      /* Paused: nothing more is read until JavaScript resumes. */
      c->paused = 1;
      if (c->reading) {
        uv_read_stop((uv_stream_t *)&c->tcp);
        c->reading = 0;
      }
      go = 0;
    }
  } else
    go = 0;
  napi_close_handle_scope(g_env, scope);
  return go;
}

/** One read of the connection's socket. */
static void conn_input(conn_t *c, const char *data, size_t n) {
  oreq_t *r = c->req;
  if (!r) {
    /* Bytes while idle: the origin is confused or hostile; nothing more goes over this connection. */
    conn_destroy(c);
    return;
  }
  c->answering = 1;
  c->activity = uv_now(g_loop);
  if (c->state == C_BODY) {
    const char *body;
    size_t blen;
    int done = 0;
    const char *err = take_body(c, data, n, &body, &blen, &done);
    if (err) {
      protocol_error(c, err);
      return;
    }
    if (blen == 0 && !done) return;
    deliver(c, r, 0, NULL, 0, -1, body, blen, done);
    return;
  }
  /* The head: from this read alone, or after what earlier reads left. */
  const char *p = data;
  size_t seen = 0;
  if (c->hlen > 0) {
    seen = c->hlen;
    if (!append(&c->hbuf, &c->hlen, &c->hcap, data, n)) {
      conn_fail(c, "EDGE_ORIGIN_PROTOCOL", "out of memory");
      return;
    }
    p = c->hbuf;
    n = c->hlen;
  }
  for (;;) {
    ssize_t end = find_head_end(p, seen > 3 ? seen - 3 : 0, n);
    if (end < 0) {
      const char *err = check_partial_head(p, seen > 0 ? seen - 1 : 0, n);
      if (err) {
        protocol_error(c, err);
        return;
      }
      if (c->hbuf && p >= c->hbuf && p < c->hbuf + c->hcap) {
        /* Inside hbuf already (after an interim answer): moved to its start. */
        memmove(c->hbuf, p, n);
        c->hlen = n;
      } else {
        c->hlen = 0;
        if (!append(&c->hbuf, &c->hlen, &c->hcap, p, n)) conn_fail(c, "EDGE_ORIGIN_PROTOCOL", "out of memory");
      }
      return;
    }
    head_t h;
    const char *err = parse_head(p, (size_t)end, &h);
    if (err) {
      protocol_error(c, err);
      return;
    }
    size_t head_len = (size_t)end + 1;
    if (h.status < 200) {
      /* 101: the edge never asks to switch protocols; anything else interim (100, 102, 103) is skipped. */
      if (h.status == 101) {
        protocol_error(c, "101 Switching Protocols to a request without Upgrade");
        return;
      }
      if (++c->interim > MAX_INTERIM) {
        protocol_error(c, "too many interim responses");
        return;
      }
      p += head_len;
      n -= head_len;
      seen = 0;
      if (n == 0) {
        c->hlen = 0;
        return;
      }
      continue;
    }
    int no_body = (r->flags & F_HEAD) || h.status == 204 || h.status == 304;
    if (no_body) {
      c->framing = FR_NONE;
      /* A 204/304 that announces a body sends bytes that must not be read as the next answer. */
      if (!(r->flags & F_HEAD) && (h.chunked || h.content_length > 0)) c->reusable = 0;
    } else if (h.chunked) {
      c->framing = FR_CHUNKED;
      c->chunk = CH_SIZE;
      c->trailer_bytes = 0;
      c->tlen = 0;
      c->llen = 0;
    } else if (h.content_length >= 0) {
      c->framing = FR_LENGTH;
      c->remaining = (uint64_t)h.content_length;
    } else {
      c->framing = FR_CLOSE;
      c->reusable = 0;
    }
    if (h.close || h.keep_alive_max == 1) c->reusable = 0;
    c->idle_ms = DEFAULT_IDLE_MS;
    if (h.keep_alive_ms >= 0) {
      /* Leave a second's margin before the origin's own timeout; under that, do not keep the connection at all. */
      c->idle_ms = h.keep_alive_ms - 1000 < DEFAULT_IDLE_MS ? h.keep_alive_ms - 1000 : DEFAULT_IDLE_MS;
      if (c->idle_ms <= 0) c->reusable = 0;
    }
    c->state = C_BODY;
    const char *body;
    size_t blen;
    int done = 0;
    if (c->framing == FR_LENGTH && c->remaining == 0) {
      done = 1;
      body = NULL;
      blen = 0;
      if (head_len < n) c->reusable = 0;
    } else {
      err = take_body(c, p + head_len, n - head_len, &body, &blen, &done);
      if (err) {
        protocol_error(c, err);
        return;
      }
    }
    if (!done) {
      /* The body's timeout: it must move at least once per body timeout (checked against c->activity). */
      conn_timer(c, r->body_ms);
    }
    deliver(c, r, h.status, p, head_len, h.content_length, body, blen, done);
    return;
  }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  (void)suggested;
  buf->base = g_rbuf;
  buf->len = READ_SIZE;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  conn_t *c = (conn_t *)s->data;
  if (c->state == C_CLOSED) return;
  if (nread > 0) {
    conn_input(c, g_rbuf, (size_t)nread);
    return;
  }
  if (nread == 0) return;
  if (nread == UV_EOF) {
    /* The origin closed its side: a close-delimited answer is complete; anything else in flight failed. */
    oreq_t *r = c->req;
    if (r && c->state == C_BODY && c->framing == FR_CLOSE) {
      c->reusable = 0;
      deliver(c, r, 0, NULL, 0, -1, NULL, 0, 1);
      return;
    }
    if (r) conn_fail(c, "EDGE_ORIGIN_CLOSED", "origin closed the connection");
    else conn_destroy(c);
    return;
  }
  if (c->req) conn_fail_uv(c, (int)nread, "read");
  else conn_destroy(c);
}

/* ---- functions for JavaScript ------------------------------------------------------------------------------- */

#define ARGS(n)                                                                                                      \
  size_t argc = n;                                                                                                   \
  napi_value argv[n];                                                                                                \
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL)

static int32_t arg_i32(napi_env env, napi_value v) {
  int32_t out = 0;
  napi_get_value_int32(env, v, &out);
  return out;
}

static napi_value throw_error(napi_env env, const char *msg) {
  napi_throw_error(env, NULL, msg);
  return NULL;
}

/** init(onHead, onData, onError, onDrain, meta: Int32Array, forward: Buffer) → the read buffer (a Buffer) */
static napi_value js_init(napi_env env, napi_callback_info info) {
  ARGS(6);
  if (g_env != NULL) return throw_error(env, "the native origin client is loaded once per process");
  init_tables();
  g_env = env;
  if (napi_get_uv_event_loop(env, &g_loop) != napi_ok) return throw_error(env, "no event loop");
  napi_create_reference(env, argv[0], 1, &r_on_head);
  napi_create_reference(env, argv[1], 1, &r_on_data);
  napi_create_reference(env, argv[2], 1, &r_on_error);
  napi_create_reference(env, argv[3], 1, &r_on_drain);
  napi_create_reference(env, argv[4], 1, &r_meta);
  napi_typedarray_type type;
  size_t len;
  void *data;
  napi_get_typedarray_info(env, argv[4], &type, &len, &data, NULL, NULL);
  if (type != napi_int32_array || len < META_LEN + 1) return throw_error(env, "meta must be an Int32Array");
  g_meta = (int32_t *)data;
  void *fdata;
  size_t flen;
  if (napi_get_buffer_info(env, argv[5], &fdata, &flen) != napi_ok || flen < FWD_AT + 1024)
    return throw_error(env, "the forward buffer must be a Buffer of at least 1088 bytes");
  napi_create_reference(env, argv[5], 1, &r_fwd);
  g_fwd = (char *)fdata + FWD_AT;
  g_fwd_cap = flen - FWD_AT;
  napi_value resource, name;
  napi_create_object(env, &resource);
  napi_create_reference(env, resource, 1, &r_resource);
  napi_create_string_utf8(env, "EdgeOriginClient", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, resource, name, &g_actx);
  napi_value rbuf;
  void *rdata;
  if (napi_create_buffer(env, READ_SIZE, &rdata, &rbuf) != napi_ok) return throw_error(env, "out of memory");
  napi_create_reference(env, rbuf, 1, &r_rbuf);
  g_rbuf = rdata;
  return rbuf;
}

/** poolCreate(address, port, maxConnections, maxIdle, connectTimeoutMs) → pool id */
static napi_value js_pool_create(napi_env env, napi_callback_info info) {
  ARGS(5);
  char ip[64];
  size_t n;
  napi_get_value_string_latin1(env, argv[0], ip, sizeof ip, &n);
  int port = arg_i32(env, argv[1]);
  pool_t *p = calloc(1, sizeof(pool_t));
  if (!p) return throw_error(env, "out of memory");
  if (uv_ip4_addr(ip, port, (struct sockaddr_in *)&p->addr) != 0 &&
      uv_ip6_addr(ip, port, (struct sockaddr_in6 *)&p->addr) != 0) {
    free(p);
    return throw_error(env, "not an IP address");
  }
  p->max_conn = arg_i32(env, argv[2]);
  p->max_idle = arg_i32(env, argv[3]);
  p->connect_ms = (uint32_t)arg_i32(env, argv[4]);
  size_t id = 0;
  while (id < g_pools_cap && g_pools[id]) id++;
  if (id == g_pools_cap) {
    size_t cap = g_pools_cap ? g_pools_cap * 2 : 64;
    pool_t **np = realloc(g_pools, cap * sizeof(pool_t *));
    if (!np) {
      free(p);
      return throw_error(env, "out of memory");
    }
    memset(np + g_pools_cap, 0, (cap - g_pools_cap) * sizeof(pool_t *));
    g_pools = np;
    g_pools_cap = cap;
  }
  p->id = (int32_t)id;
  g_pools[id] = p;
  napi_value out;
  napi_create_int32(env, (int32_t)id, &out);
  return out;
}

static pool_t *pool_of(napi_env env, napi_value v) {
  int32_t id = arg_i32(env, v);
  if (id < 0 || (size_t)id >= g_pools_cap) return NULL;
  return g_pools[id];
}

/** poolClose(pool): idle connections close now, busy ones when their answer is done; queued requests are served. */
static napi_value js_pool_close(napi_env env, napi_callback_info info) {
  ARGS(1);
  pool_t *p = pool_of(env, argv[0]);
  if (!p || p->closed) return NULL;
  p->closed = 1;
  p->id = -1;
  for (size_t i = 0; i < g_pools_cap; i++)
    if (g_pools[i] == p) g_pools[i] = NULL;
  p->nreqs++; /* held while its idle connections close (each may free it) */
  while (p->idle_last) conn_destroy(p->idle_last);
  p->nreqs--;
  pool_maybe_free(p);
  return NULL;
}

/** poolConnections(pool) → connections busy and idle */
static napi_value js_pool_connections(napi_env env, napi_callback_info info) {
  ARGS(1);
  pool_t *p = pool_of(env, argv[0]);
  napi_value out;
  napi_create_int32(env, p ? p->busy + p->nidle : 0, &out);
  return out;
}

/**
 * request(pool, id, head: string (latin1), flags, headersTimeoutMs, bodyTimeoutMs, declaredLength) — flags: 1 HEAD,
 * 2 retriable, 4 a body follows (write), declaredLength the body's Content-Length or -1 (chunked).
 */
static napi_value js_request(napi_env env, napi_callback_info info) {
  ARGS(7);
  pool_t *p = pool_of(env, argv[0]);
  if (!p) return throw_error(env, "no such pool");
  int32_t id = arg_i32(env, argv[1]);
  if (id < 0) return throw_error(env, "bad id");
  size_t len;
  napi_get_value_string_latin1(env, argv[2], NULL, 0, &len);
  oreq_t *r = req_alloc(len + 1);
  if (!r) return throw_error(env, "out of memory");
  napi_get_value_string_latin1(env, argv[2], r->head, len + 1, &r->head_len);
  r->id = id;
  r->flags = arg_i32(env, argv[3]);
  r->headers_ms = (uint32_t)arg_i32(env, argv[4]);
  r->body_ms = (uint32_t)arg_i32(env, argv[5]);
  int64_t declared = -1;
  napi_get_value_int64(env, argv[6], &declared);
  r->declared = declared;
  r->bdone = !(r->flags & F_BODY);
  r->pool = p;
  p->nreqs++;
  if ((size_t)id >= g_reqs_cap) {
    size_t cap = g_reqs_cap ? g_reqs_cap : 256;
    while (cap <= (size_t)id) cap *= 2;
    oreq_t **nr = realloc(g_reqs, cap * sizeof(oreq_t *));
    if (!nr) {
      req_free(r);
      return throw_error(env, "out of memory");
    }
    memset(nr + g_reqs_cap, 0, (cap - g_reqs_cap) * sizeof(oreq_t *));
    g_reqs = nr;
    g_reqs_cap = cap;
  }
  g_reqs[id] = r;
  pool_dispatch(p, r);
  return NULL;
}

static oreq_t *req_of(napi_env env, napi_value v) {
  int32_t id = arg_i32(env, v);
  if (id < 0 || (size_t)id >= g_reqs_cap) return NULL;
  return g_reqs[id];
}

/**
 * write(id, chunk: Buffer | undefined, last) → false when JavaScript should wait for onDrain. The body is checked
 * against its declared length by the caller.
 */
static napi_value js_write(napi_env env, napi_callback_info info) {
  ARGS(3);
  oreq_t *r = req_of(env, argv[0]);
  napi_value out;
  if (!r || r->bdone) {
    napi_get_boolean(env, true, &out);
    return out;
  }
  char *data = NULL;
  size_t len = 0;
  napi_valuetype t;
  napi_typeof(env, argv[1], &t);
  if (t == napi_object) napi_get_buffer_info(env, argv[1], (void **)&data, &len);
  bool last = false;
  napi_get_value_bool(env, argv[2], &last);
  conn_t *c = r->conn;
  int wait = 0;
  if (c && (c->state == C_HEAD || c->state == C_BODY)) {
    c->activity = uv_now(g_loop);
    int e = body_write(c, r, NULL, 0, data, len, last);
    if (e < 0) conn_fail_later(c, e);
    else if (last && c->state == C_HEAD) {
      c->deadline = uv_now(g_loop) + r->headers_ms;
      conn_timer(c, r->headers_ms);
    }
    if (c->queued_bytes >= BODY_HIGH_WATER) wait = 1;
  } else {
    /* Not connected yet: kept in order for conn_start. */
    bchunk_t *b = malloc(sizeof(bchunk_t) + len);
    if (!b) return throw_error(env, "out of memory");
    b->next = NULL;
    b->len = len;
    b->last = last;
    if (len) memcpy(b->data, data, len);
    if (r->btail) r->btail->next = b;
    else r->bhead = b;
    r->btail = b;
    size_t held = 0;
    for (bchunk_t *x = r->bhead; x; x = x->next) held += x->len;
    if (held >= BODY_HIGH_WATER) wait = 1;
  }
  if (wait) r->bwaiting = 1;
  napi_get_boolean(env, !wait, &out);
  return out;
}

/** abort(id): the request is dropped wherever it is, with no callback (JavaScript reports it). */
static napi_value js_abort(napi_env env, napi_callback_info info) {
  ARGS(1);
  oreq_t *r = req_of(env, argv[0]);
  if (!r) return NULL;
  pool_t *p = r->pool;
  conn_t *c = r->conn;
  if (r->queued) {
    queue_remove(p, r);
    req_free(r);
    return NULL;
  }
  if (c) {
    r->conn = NULL;
    c->req = NULL;
    if (c->state == C_CONNECTING) {
      /* Aborted while connecting: the connection serves the next request. */
      req_free(r);
      return NULL;
    }
    conn_destroy(c);
  }
  req_free(r);
  return NULL;
}

/** resume(id): reading goes on after a callback returned false. */
static napi_value js_resume(napi_env env, napi_callback_info info) {
  ARGS(1);
  oreq_t *r = req_of(env, argv[0]);
  if (!r || !r->conn) return NULL;
  conn_t *c = r->conn;
  if (c->paused && c->req == r) {
    c->paused = 0;
    c->activity = uv_now(g_loop);
    conn_read(c);
  }
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"init", NULL, js_init, NULL, NULL, NULL, napi_default, NULL},
      {"poolCreate", NULL, js_pool_create, NULL, NULL, NULL, napi_default, NULL},
      {"poolClose", NULL, js_pool_close, NULL, NULL, NULL, napi_default, NULL},
      {"poolConnections", NULL, js_pool_connections, NULL, NULL, NULL, napi_default, NULL},
      {"request", NULL, js_request, NULL, NULL, NULL, napi_default, NULL},
      {"write", NULL, js_write, NULL, NULL, NULL, napi_default, NULL},
      {"abort", NULL, js_abort, NULL, NULL, NULL, napi_default, NULL},
      {"resume", NULL, js_resume, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
