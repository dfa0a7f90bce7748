// PushRelay in a browser: register, stream, acknowledge, decode the shop scenario.
//
// Two ways to hold the stream open, both with at-least-once delivery made exactly-once for the app:
// - "eventsource": EventSource cannot send Authorization, so the client exchanges the device secret for a
//   short-lived, single-use ticket (POST /v1/stream-ticket) and opens /v1/stream?ticket=…; each reconnection takes a
//   new ticket (EventSource's own retry would reuse the used one, so the client closes it and opens another).
// - "fetch": fetch() with Authorization: Bearer and a streaming body reader.
// Either way each message is handed to the app once (ids remembered), then acknowledged with POST /v1/ack; a
// message the app did not take (the handler threw) is not acknowledged and arrives again on the next stream.
// The relay must list the page's origin in cors_allowed_origins.

export class PushRelayClient {
  constructor({ server, project, app, clientKey, credentials = null, transport = "eventsource",
                backoff = { base: 500, maximum: 30000 } }) {
    this.server = server.replace(/\/+$/, "");
    this.project = project;
    this.app = app;
    this.clientKey = clientKey;
    this.credentials = credentials;
    this.transport = transport;
    this.backoff = backoff;
    this.seen = new Set();
    this.seenOrder = [];
    this.stopped = true;
    this.onstate = () => {};
  }

  // POST /v1/register with the project's client key → {token, secret, sender_id}.
  async register() {
    const response = await fetch(`${this.server}/v1/register`, {
      method: "POST",
      headers: { "Authorization": `key=${this.clientKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({ project: this.project, app: this.app, platform: "web" }),
    });
    if (!response.ok) throw new Error(`register: ${response.status} ${await response.text()}`);
    this.credentials = await response.json();
    this.onstate({ state: "registered", token: this.credentials.token });
    return this.credentials;
  }

  // Keeps a stream open and calls onMessage(message) once per message until stop().
  async start(onMessage) {
    if (!this.credentials) await this.register();
    this.stopped = false;
    let attempt = 0;
    while (!this.stopped) {
      this.onstate({ state: "connecting" });
      try {
        const opened = this.transport === "fetch" ? this.#streamWithFetch(onMessage)
                                                  : this.#streamWithEventSource(onMessage);
        await opened;
        attempt = 0;
      } catch (error) {
        if (error.permanent) {
          this.onstate({ state: "failed", message: String(error.message) });
          throw error;
        }
        this.onstate({ state: "reconnecting", message: String(error.message ?? error) });
      }
      if (this.stopped) break;
      const delay = Math.random() * Math.min(this.backoff.maximum, this.backoff.base * 2 ** attempt++);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
    this.onstate({ state: "idle" });
  }

  stop() {
    this.stopped = true;
    this.abort?.();
  }

  // POST /v1/stream-ticket with the secret → a ticket for one EventSource.
  async ticket() {
    const response = await fetch(`${this.server}/v1/stream-ticket`, {
      method: "POST", headers: { "Authorization": `Bearer ${this.credentials.secret}` },
    });
    if (response.status === 401 || response.status === 404) throw permanent(`stream-ticket: ${response.status}`);
    if (!response.ok) throw new Error(`stream-ticket: ${response.status}`);
    return (await response.json()).ticket;
  }

  #streamWithEventSource(onMessage) {
    return this.ticket().then((ticket) => new Promise((resolve, reject) => {
      const source = new EventSource(`${this.server}/v1/stream?ticket=${encodeURIComponent(ticket)}`);
      let queue = Promise.resolve();
      const end = (error) => {
        source.close();
        this.abort = undefined;
        error ? reject(error) : resolve();
      };
      this.abort = () => end();
      source.onopen = () => this.onstate({ state: "connected" });
      source.onmessage = (event) => {
        queue = queue.then(() => this.#deliver(event.lastEventId, event.data, onMessage)).catch(() => {});
      };
      // Whatever the error, this EventSource's ticket is spent: close it and open another with a new ticket.
      source.onerror = () => end(new Error("stream lost"));
    }));
  }

  async #streamWithFetch(onMessage) {
    const controller = new AbortController();
    this.abort = () => controller.abort();
    const response = await fetch(`${this.server}/v1/stream`, {
      headers: { "Authorization": `Bearer ${this.credentials.secret}`, "Accept": "text/event-stream" },
      signal: controller.signal,
    });
    if (response.status === 401 || response.status === 404) throw permanent(`stream: ${response.status}`);
    if (!response.ok) throw new Error(`stream: ${response.status}`);
    this.onstate({ state: "connected" });
    const parser = new EventStreamParser();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const event of parser.feed(value)) await this.#deliver(event.id, event.data, onMessage);
      }
    } catch (error) {
      if (this.stopped) return;
      throw error;
    } finally {
      this.abort = undefined;
    }
    if (!this.stopped) throw new Error("the server ended the stream");
  }

  // Once to the app, then acknowledged; a duplicate (at-least-once) is only acknowledged again.
  async #deliver(id, data, onMessage) {
    if (!id) return;
    if (!this.seen.has(id)) {
      const message = { id, envelope: JSON.parse(data) };
      await onMessage(message);  // throws: not acknowledged, delivered again on the next stream
      this.seen.add(id);
      this.seenOrder.push(id);
      if (this.seenOrder.length > 1024) this.seen.delete(this.seenOrder.shift());
    }
    await this.acknowledge([id]);
  }

  // POST /v1/ack {ids}.
  async acknowledge(ids) {
    const response = await fetch(`${this.server}/v1/ack`, {
      method: "POST",
      headers: { "Authorization": `Bearer ${this.credentials.secret}`, "Content-Type": "application/json" },
      body: JSON.stringify({ ids }),
    });
    if (!response.ok) throw new Error(`ack: ${response.status}`);
    return (await response.json()).acknowledged;
  }
}

// A minimal text/event-stream parser (WHATWG): comments skipped, data lines joined, id kept.
export class EventStreamParser {
  constructor() { this.buffer = ""; this.data = []; this.id = ""; }

  feed(text) {
    this.buffer += text;
    const events = [];
    let end;
    while ((end = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, end);
      const length = this.buffer.startsWith("\r\n", end) ? 2 : 1;
      this.buffer = this.buffer.slice(end + length);
      if (line === "") {
        if (this.data.length) events.push({ id: this.id, data: this.data.join("\n") });
        this.data = [];
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") this.data.push(value);
        else if (field === "id" && !value.includes("\0")) this.id = value;
      }
    }
    return events;
  }
}

// The value of gcm.notification.<key> (JSON text, as FCM delivers objects, or a nested object), decoded.
export function decodeNotification(envelope, key) {
  const raw = envelope[`gcm.notification.${key}`];
  if (raw === undefined) throw new Error(`the message has no gcm.notification.${key}`);
  return typeof raw === "string" ? JSON.parse(raw) : raw;
}

// The shop scenario's SalesNotification: orderID or orderId (both seen in the wild), a number or numeric string.
export function decodeSalesNotification(envelope) {
  const info = decodeNotification(envelope, "orderInfo");
  const ids = ["orderID", "orderId"].filter((key) => key in info).map((key) => {
    const id = Number(info[key]);
    if (!Number.isInteger(id)) throw new Error(`${key} is not an integer`);
    return id;
  });
  if (ids.length === 0) throw new Error("neither orderID nor orderId is present");
  if (ids.length === 2 && ids[0] !== ids[1]) throw new Error("orderID and orderId disagree");
  for (const key of ["newOrderStatus", "userEmail", "infoReason"]) {
    if (typeof info[key] !== "string") throw new Error(`${key} must be a string`);
  }
  return { newOrderStatus: info.newOrderStatus, userEmail: info.userEmail, orderID: ids[0],
           infoReason: info.infoReason };
}

// The course's screen, five lines.
export function salesScreen(messageId, sales) {
  return [`Message Id: ${messageId}`, `Reason: ${sales.infoReason}`, `Order Id: ${sales.orderID}`,
          `Status: ${sales.newOrderStatus}`, `Email: ${sales.userEmail}`];
}

function permanent(message) {
  const error = new Error(message);
  error.permanent = true;
  return error;
}
