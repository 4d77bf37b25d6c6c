// Batched UDP datagram I/O for the dns-server (Linux): one socket polled on Node's own event loop (uv_poll_t),
// drained with recvmmsg up to `batch` datagrams at a time; the JavaScript handler is called once per batch and
// leaves its answers in a shared buffer, which go out with one sendmmsg. Answers the socket cannot take yet (EAGAIN)
// are kept (at most one batch) and sent when it becomes writable; no datagram is read meanwhile, so the kernel's
// receive buffer is the only queue.
//
// Shared memory, allocated by JavaScript and held here by reference for the socket's lifetime:
//   rx    batch slots of `stride` bytes: slot i holds the first `slot` bytes of datagram i of the batch (a query
//         fits; the slots are close together, so a batch touches few pages)
//   ovf   batch areas of OVERFLOW - `slot` bytes: the rest of a datagram longer than `slot` (rare)
//   meta  Int32Array, META_FIELDS per slot (see META_*): filled here on receive, the answer's place filled by JS
//   addr  ADDR_TEXT bytes per slot: the peer's address as text (as node:dgram reports it), for rate limiting
//   tx    answers, packed; slot i's answer is tx[meta[TX_OFF], +meta[TX_LEN]), length 0 = no answer
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <node_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

/** Room for any UDP datagram (65,507 bytes): the slot and its overflow area together. */
#define OVERFLOW 65536

enum { META_RX_LEN, META_FAMILY, META_V4, META_ADDR_LEN, META_TX_OFF, META_TX_LEN, META_FIELDS };
#define ADDR_TEXT 48
/** Batches read per wake-up before the loop gets a turn (timers, TCP, IPC). */
#define ROUNDS_PER_WAKEUP 8

typedef struct {
  napi_env env;
  int fd;
  int polling; // events currently polled
  int closing;
  uv_poll_t poll;
  unsigned batch;
  bool addresses; // fill in the peers' addresses as text
  size_t stride, slot;
  uint8_t *ovf;
  uint8_t *rx;
  int32_t *meta;
  char *addr;
  uint8_t *tx;
  size_t tx_len;
  struct mmsghdr *rmsg;
  struct iovec *riov;
  struct sockaddr_storage *peer;
  struct mmsghdr *smsg;
  struct iovec *siov;
  // Answers kept after EAGAIN: copies of their bytes and peers, sent from pend_next on.
  uint8_t *pend_buf;
  struct mmsghdr *pmsg;
  struct iovec *piov;
  struct sockaddr_storage *ppeer;
  unsigned pend_n, pend_next;
  // Fault injection for the tests (open's faultEvery, 0: off): every n-th batch's sendmmsg takes half the answers
  // and then reports EAGAIN, so the keep-and-send-when-writable path runs on a loopback that never fills.
  uint32_t fault_every, sends;
  napi_ref cb, rx_ref, ovf_ref, meta_ref, addr_ref, tx_ref;
  napi_async_context actx;
} sock_t;

#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    if ((call) != napi_ok) goto fail;                                                                                  \
  } while (0)

static const char *errno_code(int e) {
  switch (e) {
  case EADDRINUSE: return "EADDRINUSE";
  case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
  case EACCES: return "EACCES";
  case EAFNOSUPPORT: return "EAFNOSUPPORT";
  case EINVAL: return "EINVAL";
  case EMFILE: return "EMFILE";
  case ENOMEM: return "ENOMEM";
  default: return "EIO";
  }
}

static void throw_errno(napi_env env, const char *what, int e) {
  char msg[160];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(e));
  napi_throw_error(env, errno_code(e), msg);
}

static void on_poll(uv_poll_t *h, int status, int events);

static void set_events(sock_t *s, int events) {
  if (s->closing || s->polling == events) return;
  s->polling = events;
  uv_poll_start(&s->poll, events, on_poll); // (libuv sets the callback on every start)
}

/** Sends msgs[from, n): returns the index of the first one not sent because of EAGAIN, or n. */
static unsigned send_all(sock_t *s, struct mmsghdr *msgs, unsigned from, unsigned n) {
  unsigned i = from;
  while (i < n) {
    int r = sendmmsg(s->fd, msgs + i, n - i, MSG_DONTWAIT);
    if (r > 0) {
      i += (unsigned)r;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return i;
    i++; // this datagram cannot be sent (ENOBUFS, an ICMP error reported, a bad peer): dropped, as node:dgram does
  }
  return n;
}

/** Keeps msgs[from, n) for later: copies of the bytes and peers, since the next batch reuses tx. */
static void keep_unsent(sock_t *s, unsigned from, unsigned n) {
  if (s->pend_buf == NULL) {
    s->pend_buf = malloc(s->tx_len);
    s->pmsg = calloc(s->batch, sizeof *s->pmsg);
    s->piov = calloc(s->batch, sizeof *s->piov);
    s->ppeer = calloc(s->batch, sizeof *s->ppeer);
    if (!s->pend_buf || !s->pmsg || !s->piov || !s->ppeer) return; // out of memory: these answers are lost
  }
  size_t off = 0;
  unsigned k = 0;
  for (unsigned i = from; i < n; i++, k++) {
    struct mmsghdr *m = &s->smsg[i];
    size_t len = m->msg_hdr.msg_iov->iov_len;
    memcpy(s->pend_buf + off, m->msg_hdr.msg_iov->iov_base, len);
    memcpy(&s->ppeer[k], m->msg_hdr.msg_name, m->msg_hdr.msg_namelen);
    s->piov[k].iov_base = s->pend_buf + off;
    s->piov[k].iov_len = len;
    memset(&s->pmsg[k], 0, sizeof s->pmsg[k]);
    s->pmsg[k].msg_hdr.msg_name = &s->ppeer[k];
    s->pmsg[k].msg_hdr.msg_namelen = m->msg_hdr.msg_namelen;
    s->pmsg[k].msg_hdr.msg_iov = &s->piov[k];
    s->pmsg[k].msg_hdr.msg_iovlen = 1;
    off += len;
  }
  s->pend_n = k;
  s->pend_next = 0;
  set_events(s, UV_WRITABLE);
}

/** The answers JavaScript left for the batch of n, sent in one go. */
static void send_answers(sock_t *s, unsigned n) {
  unsigned k = 0;
  for (unsigned i = 0; i < n; i++) {
    int32_t *m = s->meta + i * META_FIELDS;
    int32_t off = m[META_TX_OFF], len = m[META_TX_LEN];
    if (len <= 0 || off < 0 || (size_t)off + (size_t)len > s->tx_len) continue;
    s->siov[k].iov_base = s->tx + off;
    s->siov[k].iov_len = (size_t)len;
    struct msghdr *h = &s->smsg[k].msg_hdr;
    h->msg_name = &s->peer[i];
    h->msg_namelen = s->rmsg[i].msg_hdr.msg_namelen;
    h->msg_iov = &s->siov[k];
    h->msg_iovlen = 1;
    h->msg_control = NULL;
    h->msg_controllen = 0;
    h->msg_flags = 0;
    k++;
  }
  if (s->fault_every > 0 && k > 1 && ++s->sends % s->fault_every == 0) {
    keep_unsent(s, send_all(s, s->smsg, 0, k / 2), k);
    return;
  }
  unsigned sent = send_all(s, s->smsg, 0, k);
  if (sent < k) keep_unsent(s, sent, k);
}

static void fill_meta(sock_t *s, unsigned n) {
  for (unsigned i = 0; i < n; i++) {
    int32_t *m = s->meta + i * META_FIELDS;
    struct sockaddr_storage *p = &s->peer[i];
    char *text = s->addr + i * ADDR_TEXT;
    m[META_RX_LEN] = (int32_t)s->rmsg[i].msg_len;
    m[META_TX_LEN] = 0;
    m[META_ADDR_LEN] = 0;
    if (p->ss_family == AF_INET) {
      const struct sockaddr_in *a = (const struct sockaddr_in *)p;
      m[META_FAMILY] = 4;
      m[META_V4] = (int32_t)ntohl(a->sin_addr.s_addr);
      if (s->addresses && inet_ntop(AF_INET, &a->sin_addr, text, ADDR_TEXT) != NULL)
        m[META_ADDR_LEN] = (int32_t)strlen(text);
    } else {
      const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)p;
      m[META_FAMILY] = 6;
      m[META_V4] = 0;
      if (s->addresses && inet_ntop(AF_INET6, &a->sin6_addr, text, ADDR_TEXT) != NULL)
        m[META_ADDR_LEN] = (int32_t)strlen(text);
    }
  }
}

/** Calls the handler with the batch size; an exception it lets out is reported like any uncaught one. */
static void call_handler(sock_t *s, unsigned n) {
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

static void on_poll(uv_poll_t *h, int status, int events) {
  sock_t *s = h->data;
  if (s->closing) return;
  if (status < 0) {
    // libuv stops the handle on an error condition (POLLERR): clear the socket's pending error and poll again, so a
    // stray error never leaves the port unanswered.
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    s->polling = 0;
    set_events(s, s->pend_n > 0 ? UV_WRITABLE : UV_READABLE);
    return;
  }
  if (s->pend_n > 0) {
    if (!(events & UV_WRITABLE)) return;
    unsigned sent = send_all(s, s->pmsg, s->pend_next, s->pend_n);
    if (sent < s->pend_n) {
      s->pend_next = sent;
      return;
    }
    s->pend_n = 0;
    set_events(s, UV_READABLE);
  }
  for (int round = 0; round < ROUNDS_PER_WAKEUP && !s->closing && s->pend_n == 0; round++) {
    for (unsigned i = 0; i < s->batch; i++) s->rmsg[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_storage);
    int n = recvmmsg(s->fd, s->rmsg, s->batch, MSG_DONTWAIT, NULL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      break; // EAGAIN, or an error queued by an ICMP message (nothing to do per packet, as node:dgram)
    }
    fill_meta(s, (unsigned)n);
    call_handler(s, (unsigned)n);
    if (s->closing) return;
    send_answers(s, (unsigned)n);
    if ((unsigned)n < s->batch) break;
  }
}

static void release(sock_t *s) {
  napi_env env = s->env;
  napi_ref refs[] = {s->cb, s->rx_ref, s->ovf_ref, s->meta_ref, s->addr_ref, s->tx_ref};
  for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++)
    if (refs[i]) napi_delete_reference(env, refs[i]);
  if (s->actx) napi_async_destroy(env, s->actx);
  free(s->rmsg);
  free(s->riov);
  free(s->peer);
  free(s->smsg);
  free(s->siov);
  free(s->pend_buf);
  free(s->pmsg);
  free(s->piov);
  free(s->ppeer);
  free(s);
}

// The descriptor is closed once libuv has let go of the handle.
static void on_closed(uv_handle_t *h) {
  sock_t *s = h->data;
  close(s->fd);
  release(s);
}

static void cleanup_hook(void *arg);

static void close_socket(sock_t *s) {
  if (s->closing) return;
  s->closing = 1;
  napi_remove_env_cleanup_hook(s->env, cleanup_hook, s);
  uv_poll_stop(&s->poll);
  uv_close((uv_handle_t *)&s->poll, on_closed);
}

static void on_closed_at_teardown(uv_handle_t *h) {
  sock_t *s = h->data;
  close(s->fd);
  free(s); // the environment is going away: its references go with it
}

/** The environment (the process, or a worker thread) is being torn down while the socket is open. */
static void cleanup_hook(void *arg) {
  sock_t *s = arg;
  if (s->closing) return;
  s->closing = 1;
  uv_poll_stop(&s->poll);
  uv_close((uv_handle_t *)&s->poll, on_closed_at_teardown);
}

static bool get_bytes(napi_env env, napi_value v, void **data, size_t *len) {
  bool is;
  if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
    napi_typedarray_type t;
    size_t length, offset;
    napi_value ab;
    if (napi_get_typedarray_info(env, v, &t, &length, data, &ab, &offset) != napi_ok) return false;
    size_t unit = t == napi_int32_array || t == napi_uint32_array ? 4 : 1;
    *len = length * unit;
    return true;
  }
  return false;
}

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

/**
 * open({ host, port, reusePort, recvBufferSize, batch, stride, slot, addresses, rx, ovf, meta, addr, tx }, onBatch)
 *   → { handle, port }. Binds and starts reading at once.
 */
static napi_value js_open(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2], result = NULL;
  sock_t *s = NULL;
  int fd = -1;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2) {
    napi_throw_type_error(env, NULL, "open(options, onBatch)");
    return NULL;
  }
  napi_value o = argv[0];
  char host[64] = {0};
  size_t host_len;
  CHECK(napi_get_value_string_utf8(env, get_prop(env, o, "host"), host, sizeof host, &host_len));
  uint32_t port = get_u32(env, o, "port"), rcvbuf = get_u32(env, o, "recvBufferSize");
  uint32_t batch = get_u32(env, o, "batch"), stride = get_u32(env, o, "stride"), slot = get_u32(env, o, "slot");
  bool reuse = false, addresses = false;
  napi_get_value_bool(env, get_prop(env, o, "reusePort"), &reuse);
  napi_get_value_bool(env, get_prop(env, o, "addresses"), &addresses);
  if (batch == 0 || batch > 1024 || slot < 512 || slot >= OVERFLOW || stride < slot || port > 65535) {
    napi_throw_range_error(env, NULL, "batch 1..1024, slot 512..65535 and at most stride, port 0..65535");
    return NULL;
  }

  s = calloc(1, sizeof *s);
  if (!s) goto nomem;
  s->env = env;
  s->fd = -1;
  s->batch = batch;
  s->addresses = addresses;
  s->stride = stride;
  s->slot = slot;
  s->fault_every = get_u32(env, o, "faultEvery");
  napi_value rx = get_prop(env, o, "rx"), ovf = get_prop(env, o, "ovf"), meta = get_prop(env, o, "meta"),
             addr = get_prop(env, o, "addr"), tx = get_prop(env, o, "tx");
  size_t rx_len, ovf_len, meta_len, addr_len;
  if (!get_bytes(env, rx, (void **)&s->rx, &rx_len) || !get_bytes(env, ovf, (void **)&s->ovf, &ovf_len) ||
      ovf_len < (size_t)batch * (OVERFLOW - slot) || !get_bytes(env, meta, (void **)&s->meta, &meta_len) ||
      !get_bytes(env, addr, (void **)&s->addr, &addr_len) || !get_bytes(env, tx, (void **)&s->tx, &s->tx_len) ||
      rx_len < (size_t)batch * stride || meta_len < (size_t)batch * META_FIELDS * 4 ||
      addr_len < (size_t)batch * ADDR_TEXT) {
    free(s);
    napi_throw_range_error(env, NULL, "rx, meta, addr or tx too small for the batch");
    return NULL;
  }

  struct sockaddr_storage local;
  socklen_t local_len;
  memset(&local, 0, sizeof local);
  int family;
  struct sockaddr_in *l4 = (struct sockaddr_in *)&local;
  struct sockaddr_in6 *l6 = (struct sockaddr_in6 *)&local;
  if (inet_pton(AF_INET, host, &l4->sin_addr) == 1) {
    family = AF_INET;
    l4->sin_family = AF_INET;
    l4->sin_port = htons((uint16_t)port);
    local_len = sizeof *l4;
  } else if (inet_pton(AF_INET6, host, &l6->sin6_addr) == 1) {
    family = AF_INET6;
    l6->sin6_family = AF_INET6;
    l6->sin6_port = htons((uint16_t)port);
    local_len = sizeof *l6;
  } else {
    free(s);
    napi_throw_type_error(env, "EINVAL", "host must be an IPv4 or IPv6 address");
    return NULL;
  }
  fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    free(s);
    throw_errno(env, "socket", errno);
    return NULL;
  }
  int one = 1;
  if (reuse && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) goto sys_fail_setsockopt;
  if (rcvbuf > 0) {
    int size = (int)rcvbuf;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size); // capped by net.core.rmem_max, like node:dgram
  }
  if (family == AF_INET) {
    // DF on every answer (DNS flag day 2020: UDP answers are not fragmented; ours are at most 1,232 bytes), with the
    // path MTU that ICMP reports ignored, so a forged "fragmentation needed" cannot make answers fail. A DF datagram
    // also takes IP ID 0 instead of one drawn per datagram from the kernel's shared generator (__ip_select_ident,
    // 3.5 % of the server's CPU in a profile under dnsperf).
    int probe = IP_PMTUDISC_PROBE;
    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &probe, sizeof probe);
  }
  if (bind(fd, (struct sockaddr *)&local, local_len) != 0) {
    int e = errno;
    close(fd);
    free(s);
    throw_errno(env, "bind", e);
    return NULL;
  }
  local_len = sizeof local;
  getsockname(fd, (struct sockaddr *)&local, &local_len);
  uint32_t bound = ntohs(family == AF_INET ? l4->sin_port : l6->sin6_port);
  s->fd = fd;

  s->rmsg = calloc(batch, sizeof *s->rmsg);
  s->riov = calloc(batch * 2, sizeof *s->riov);
  s->peer = calloc(batch, sizeof *s->peer);
  s->smsg = calloc(batch, sizeof *s->smsg);
  s->siov = calloc(batch, sizeof *s->siov);
  if (!s->rmsg || !s->riov || !s->peer || !s->smsg || !s->siov) {
    close(fd);
    fd = -1;
    s->fd = -1;
    release(s);
    s = NULL;
    goto nomem;
  }
  for (unsigned i = 0; i < batch; i++) {
    s->riov[2 * i].iov_base = s->rx + (size_t)i * stride;
    s->riov[2 * i].iov_len = slot;
    s->riov[2 * i + 1].iov_base = s->ovf + (size_t)i * (OVERFLOW - slot);
    s->riov[2 * i + 1].iov_len = OVERFLOW - slot;
    s->rmsg[i].msg_hdr.msg_name = &s->peer[i];
    s->rmsg[i].msg_hdr.msg_namelen = sizeof s->peer[i];
    s->rmsg[i].msg_hdr.msg_iov = &s->riov[2 * i];
    s->rmsg[i].msg_hdr.msg_iovlen = 2;
  }

  napi_value resource_name;
  CHECK(napi_create_reference(env, argv[1], 1, &s->cb));
  CHECK(napi_create_reference(env, rx, 1, &s->rx_ref));
  CHECK(napi_create_reference(env, ovf, 1, &s->ovf_ref));
  CHECK(napi_create_reference(env, meta, 1, &s->meta_ref));
  CHECK(napi_create_reference(env, addr, 1, &s->addr_ref));
  CHECK(napi_create_reference(env, tx, 1, &s->tx_ref));
  CHECK(napi_create_string_utf8(env, "BatchUdp", NAPI_AUTO_LENGTH, &resource_name));
  CHECK(napi_async_init(env, NULL, resource_name, &s->actx));

  uv_loop_t *loop;
  CHECK(napi_get_uv_event_loop(env, &loop));
  if (uv_poll_init(loop, &s->poll, fd) != 0) goto fail;
  s->poll.data = s;
  s->polling = UV_READABLE;
  uv_poll_start(&s->poll, UV_READABLE, on_poll);
  napi_add_env_cleanup_hook(env, cleanup_hook, s);

  napi_value handle, port_value;
  CHECK(napi_create_object(env, &result));
  CHECK(napi_create_external(env, s, NULL, NULL, &handle));
  CHECK(napi_create_uint32(env, bound, &port_value));
  CHECK(napi_set_named_property(env, result, "handle", handle));
  CHECK(napi_set_named_property(env, result, "port", port_value));
  return result;

sys_fail_setsockopt: {
  int e = errno;
  close(fd);
  free(s);
  throw_errno(env, "setsockopt(SO_REUSEPORT)", e);
  return NULL;
}
nomem:
  napi_throw_error(env, "ENOMEM", "out of memory");
  return NULL;
fail:
  if (s && s->poll.data == s) {
    close_socket(s);
  } else if (s) {
    if (s->fd >= 0) close(s->fd);
    release(s);
  } else if (fd >= 0) {
    close(fd);
  }
  napi_throw_error(env, NULL, "batch-udp: open failed");
  return NULL;
}

/** close(handle): stops reading, closes the socket; answers still kept after EAGAIN are dropped. */
static napi_value js_close(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  void *data = NULL;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_external(env, argv[0], &data) != napi_ok || data == NULL)
    return NULL;
  close_socket(data);
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value f;
  napi_create_function(env, "open", NAPI_AUTO_LENGTH, js_open, NULL, &f);
  napi_set_named_property(env, exports, "open", f);
  napi_create_function(env, "close", NAPI_AUTO_LENGTH, js_close, NULL, &f);
  napi_set_named_property(env, exports, "close", f);
  napi_value n;
  napi_create_uint32(env, META_FIELDS, &n);
  napi_set_named_property(env, exports, "META_FIELDS", n);
  napi_create_uint32(env, ADDR_TEXT, &n);
  napi_set_named_property(env, exports, "ADDR_TEXT", n);
  napi_create_uint32(env, OVERFLOW, &n);
  napi_set_named_property(env, exports, "OVERFLOW", n);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
