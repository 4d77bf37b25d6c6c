// Errors of the origin client. `code` is what the proxy reads to choose the answer (upstream.ts isTimeout and
// isConnectFailure); socket errors from Node (ECONNREFUSED, ECONNRESET, EPIPE, …) pass through with their own codes.

export type OriginErrorCode =
  | 'EDGE_ORIGIN_PROTOCOL' // a response the client refuses to parse (malformed, ambiguous framing)
  | 'EDGE_ORIGIN_CLOSED' // the origin closed the connection before the answer was complete
  | 'EDGE_ORIGIN_CONNECT_TIMEOUT' // no connection within the connect timeout
  | 'EDGE_ORIGIN_HEADERS_TIMEOUT' // no complete response head within the record's timeout
  | 'EDGE_ORIGIN_BODY_TIMEOUT' // the origin's body stalled
  | 'EDGE_ORIGIN_REQUEST'; // the request cannot be written (an invalid path or header, a body of the wrong length)

export class OriginError extends Error {
  constructor(
    readonly code: OriginErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'OriginError';
  }
}

export class OriginProtocolError extends OriginError {
  constructor(message: string) {
    super('EDGE_ORIGIN_PROTOCOL', `invalid response from the origin: ${message}`);
  }
}
