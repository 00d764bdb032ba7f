"""A real OTLP/HTTP trace receiver for the tests: listens on 127.0.0.1, takes each
`POST /v1/traces` (protobuf, as `OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf` sends it), decodes
the spans with the protobuf wire format read here (no generated code: the fields the tests look
at, numbered as opentelemetry-proto's trace.proto numbers them) and appends one JSON line per
span to FILE: trace and span ids in hex, parent, name, kind, attributes, status, the resource's
`service.name`. Prints `listening on PORT` first. Usage: receiver.py FILE
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


server = HTTPServer(("127.0.0.1", 0), Receiver)
print(f"listening on {server.server_address[1]}", flush=True)
server.serve_forever()
