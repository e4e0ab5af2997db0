"""A webhook receiver for classroom-sync: verifies each message with the Standard Webhooks reference
library and prints it as one JSON line on stdout. Python 3; nothing but the standard library besides it.

    pip install standardwebhooks
    WEBHOOK_SECRET=whsec_... PORT=8080 python3 receiver.py

WEBHOOK_SECRET is the endpoint's secret (`whsec_` + base64), the same value classroom-sync has in
WEBHOOK_SECRET or the account's webhookSecret. During a rotation, give this receiver either one.
"""

import json
import os
import sys
import threading
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRET = os.environ.get("WEBHOOK_SECRET")
if not SECRET:
    sys.exit("set WEBHOOK_SECRET to the endpoint secret (whsec_...)")
WEBHOOK = Webhook(SECRET)
PORT = int(os.environ.get("PORT", "8080"))
MAX_BODY_BYTES = 1024 * 1024

# A message can come more than once (at least once delivery): remember recent ids and act on each
# id once. A real receiver records the id in its database, in the transaction that acts on it.
SEEN = OrderedDict()
SEEN_LOCK = threading.Lock()


def first_time(message_id):
    with SEEN_LOCK:
        if message_id in SEEN:
            return False
        SEEN[message_id] = True
        if len(SEEN) > 10_000:
            SEEN.popitem(last=False)
        return True


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_BODY_BYTES:
            return self.answer(413)
        # The signature covers the exact bytes sent: verify the raw body, never a re-serialised one.
        body = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            # Checks webhook-id, webhook-timestamp (within 5 minutes of this clock) and webhook-signature.
            message = WEBHOOK.verify(body, headers)
        except (WebhookVerificationError, ValueError) as error:
            print(f"rejected a request: {error}", file=sys.stderr, flush=True)
            return self.answer(400, f"{error}\n")
        message_id = headers["webhook-id"]
        if first_time(message_id):
            # Act on the message here. Answer 2xx only once it is safely handled: any 5xx (or no
            # answer) makes classroom-sync send it again later, under the same webhook-id.
            line = {"id": message_id, "type": message["type"], "timestamp": message["timestamp"], "data": message["data"]}
            print(json.dumps(line), flush=True)
        self.answer(204)

    def answer(self, status, text=""):
        payload = text.encode()
        self.send_response(status)
        if payload:
            self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format, *args):
        pass  # stdout carries only the messages; errors go to stderr above


if __name__ == "__main__":
    server = ThreadingHTTPServer(("", PORT), Receiver)
    print(f"listening on port {server.server_address[1]}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        server.server_close()
