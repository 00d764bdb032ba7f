"""A real OTLP/HTTP trace receiver for the tests: listens on 127.0.0.1, takes each
`POST /v1/traces` (protobuf, as `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf` sends it), decodes
the spans with the protobuf wire format read here (no generated code: the fields the tests look
at, numbered as opentelemetry-proto's trace.proto numbers them) and appends one JSON line per
span to FILE: trace and span ids in hex, parent, name, kind, attributes, status, the resource's
`service.name`. Prints `listening on PORT` first. Usage: receiver.py FILE

`receiver.py FILE --grpc-tls DIR` takes OTLP/gRPC over TLS instead: a test CA and a certificate
for 127.0.0.1 and localhost it signs are made (with `cryptography`), the CA's PEM written to
DIR/ca.pem for the exporter to trust; each connection's TLS handshake (ALPN h2) must succeed, then the HTTP/2
frames are read (no HPACK needed: only DATA frames are decoded, each gRPC message the same
protobuf as over HTTP) and every call is answered `grpc-status: 0`.
"""

import json
import struct
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


def fields(data):
    """(number, wire type, value) of each field of one message."""
    i = 0
    while i < len(data):
        key, i = varint(data, i)
        number, kind = key >> 3, key & 7
        if kind == 0:
            value, i = varint(data, i)
        elif kind == 1:
            value, i = data[i:i + 8], i + 8
        elif kind == 2:
            size, i = varint(data, i)
            value, i = data[i:i + size], i + size
        elif kind == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {kind}")
        yield number, kind, value


def varint(data, i):
    shift = result = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, i
        shift += 7


def any_value(data):
    for number, _, value in fields(data):
        if number == 1:
            return value.decode()
        if number == 2:
            return bool(value)
        if number == 3:
            return value - (1 << 64) if value >= 1 << 63 else value
        if number == 4:
            return struct.unpack("<d", value)[0]
    return None


def attributes(pairs):
    out = {}
    for data in pairs:
        key = value = None
        for number, _, item in fields(data):
            if number == 1:
                key = item.decode()
            elif number == 2:
                value = any_value(item)
        out[key] = value
    return out


def span(data, service):
    out = {"service": service, "parent": "", "attributes": {}, "status": {"code": 0, "message": ""}}
    pairs = []
    for number, _, value in fields(data):
        if number == 1:
            out["trace"] = value.hex()
        elif number == 2:
            out["span"] = value.hex()
        elif number == 4:
            out["parent"] = value.hex()
        elif number == 5:
            out["name"] = value.decode()
        elif number == 6:
            out["kind"] = value
        elif number == 9:
            pairs.append(value)
        elif number == 15:
            for n, _, v in fields(value):
                if n == 2:
                    out["status"]["message"] = v.decode()
                elif n == 3:
                    out["status"]["code"] = v
    out["attributes"] = attributes(pairs)
    return out


def spans(request):
    for number, _, resource_spans in fields(request):
        if number != 1:
            continue
        service = None
        scopes = []
        for n, _, value in fields(resource_spans):
            if n == 1:
                resource = [v for k, _, v in fields(value) if k == 1]
                service = attributes(resource).get("service.name")
            elif n == 2:
                scopes.append(value)
        for scope in scopes:
            for n, _, value in fields(scope):
                if n == 2:
                    yield span(value, service)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces":
            self.send_response(404)
            self.end_headers()
            return
        with open(sys.argv[1], "a", encoding="utf-8") as out:
            for item in spans(body):
                out.write(json.dumps(item) + "\n")
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def self_signed(directory):
    """A test CA (its PEM written to DIR/ca.pem) and the collector's key and certificate for
    127.0.0.1 and localhost signed by it (webpki refuses a CA certificate as a server's own);
    the paths of the certificate chain and the key."""
    import datetime
    import ipaddress
    import os

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)

    def certificate(subject, issuer, public_key, signer, ca, names=None):
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = certificate("otlp test CA", "otlp test CA", ca_key.public_key(), ca_key, True)
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    leaf = certificate("otlp test collector", "otlp test CA", key.public_key(), ca_key, False, names)
    pem = serialization.Encoding.PEM
    with open(os.path.join(directory, "ca.pem"), "wb") as out:
        out.write(ca.public_bytes(pem))
    chain_path = os.path.join(directory, "collector.pem")
    with open(chain_path, "wb") as out:
        out.write(leaf.public_bytes(pem) + ca.public_bytes(pem))
    key_path = os.path.join(directory, "key.pem")
    with open(key_path, "wb") as out:
        out.write(key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ))
    return chain_path, key_path


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def serve_grpc(connection, spans_file):
    """One HTTP/2 connection: every unary call's DATA decoded, answered with status 0."""
    DATA, HEADERS, SETTINGS, PING = 0, 1, 4, 6
    END_STREAM, END_HEADERS, ACK, PADDED = 0x1, 0x4, 0x1, 0x8
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

    def read(n):
        data = b""
        while len(data) < n:
            chunk = connection.recv(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    if read(len(preface)) != preface:
        return
    connection.sendall(frame(SETTINGS, 0, 0))
    bodies = {}
    while True:
        head = read(9)
        length = int.from_bytes(head[:3], "big")
        kind, flags = head[3], head[4]
        stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        payload = read(length)
        if kind == SETTINGS and not flags & ACK:
            connection.sendall(frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            connection.sendall(frame(PING, ACK, 0, payload))
        elif kind == DATA:
            if flags & PADDED:
                payload = payload[1:len(payload) - payload[0]]
            bodies[stream] = bodies.get(stream, b"") + payload
        if kind in (DATA, HEADERS) and flags & END_STREAM:
            body = bodies.pop(stream, b"")
            with open(spans_file, "a", encoding="utf-8") as out:
                while len(body) >= 5:
                    size = int.from_bytes(body[1:5], "big")
                    for item in spans(body[5:5 + size]):
                        out.write(json.dumps(item) + "\n")
                    body = body[5 + size:]
            # `:status: 200` (static table 8), then `content-type: application/grpc` and the
            # trailer `grpc-status: 0`, both literals without indexing.
            headers = b"\x88" + b"\x0f\x10\x10application/grpc"
            trailers = b"\x00\x0bgrpc-status\x010"
            connection.sendall(frame(HEADERS, END_HEADERS, stream, headers))
            connection.sendall(frame(HEADERS, END_HEADERS | END_STREAM, stream, trailers))


def grpc_tls(spans_file, directory):
    import socket
    import ssl
    import threading

    cert, key = self_signed(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    print(f"listening on {listener.getsockname()[1]}", flush=True)
    while True:
        raw, _ = listener.accept()

        def serve(raw=raw):
            try:
                with context.wrap_socket(raw, server_side=True) as connection:
                    serve_grpc(connection, spans_file)
            except (EOFError, OSError, ssl.SSLError) as error:
                print(f"connection ended: {error}", file=sys.stderr, flush=True)

        threading.Thread(target=serve, daemon=True).start()


if len(sys.argv) > 3 and sys.argv[2] == "--grpc-tls":
    grpc_tls(sys.argv[1], sys.argv[3])
else:
    server = HTTPServer(("127.0.0.1", 0), Receiver)
    print(f"listening on {server.server_address[1]}", flush=True)
    server.serve_forever()
