"""The page's origin for the browser tests: serves the example client and the test page over TLS, and records
what the page reports (POST /result) in a file.

usage: origin_server.py CERT KEY RESULT_FILE DIR [DIR...]   (prints "port N" once listening on 127.0.0.1)
"""
import http.server
import os
import ssl
import sys

cert, key, result_file, *directories = sys.argv[1:]
types = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8"}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        name = os.path.basename(self.path.split("?", 1)[0]) or "index.html"
        for directory in directories:
            path = os.path.join(directory, name)
            if os.path.isfile(path):
                body = open(path, "rb").read()
                self.send_response(200)
                self.send_header("Content-Type", types.get(os.path.splitext(name)[1], "application/octet-stream"))
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)
                return
        self.send_error(404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/result":
            with open(result_file + ".tmp", "wb") as f:
                f.write(body)
            os.replace(result_file + ".tmp", result_file)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
print("port", server.server_address[1], flush=True)
server.serve_forever()
