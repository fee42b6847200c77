#!/usr/bin/python3
"""A gmond for the tests: on every TCP connection, the cluster's state as gmond's XML
(one cluster, two hosts, a few metrics of gmond's own kinds), as gmetad polls it.

    gmond.py PORT ANCHOR

Its clock is virtual: the k-th poll is answered as of ANCHOR + k seconds (LOCALTIME and
REPORTED), with values that are functions of the host and of k. Two gmetads polling two of
these with the same ANCHOR write the same updates, however their polls fall in real time.
"""
import socketserver
import sys

PORT = int(sys.argv[1])
ANCHOR = int(sys.argv[2])
POLLS = [0]
HOSTS = ["node1", "node2"]
# name, type, units, slope, value for host index h
METRICS = [
    ("load_one", "float", " ", "both", lambda h, k: f"{0.5 + h + (k % 7) / 4:.2f}"),
    ("cpu_user", "float", "%", "both", lambda h, k: f"{12.5 * (h + 1) + k % 13:.1f}"),
    ("mem_free", "float", "KB", "both", lambda h, k: f"{1048576 * (h + 1) - 4096 * (k % 5)}"),
    ("bytes_in", "float", "bytes/sec", "both", lambda h, k: f"{1000 * (h + 1) + 37 * k}.00"),
    ("os_name", "string", "", "zero", lambda h, k: "Linux"),
]
GROUPS = {"load_one": "load", "cpu_user": "cpu", "mem_free": "memory", "bytes_in": "network", "os_name": "system"}


def xml():
    k = POLLS[0]
    POLLS[0] += 1
    now = ANCHOR + k
    out = [
        '<?xml version="1.0" encoding="ISO-8859-1" standalone="yes"?>\n',
        '<GANGLIA_XML VERSION="3.7.2" SOURCE="gmond">\n',
        f'<CLUSTER NAME="ringtest" LOCALTIME="{now}" OWNER="unspecified" '
        'LATLONG="unspecified" URL="unspecified">\n',
    ]
    for h, host in enumerate(HOSTS):
        out.append(
            f'<HOST NAME="{host}" IP="127.0.0.{h + 1}" TAGS="" REPORTED="{now}" TN="0" '
            f'TMAX="20" DMAX="0" LOCATION="unspecified" GMOND_STARTED="{now - 3600}">\n'
        )
        for name, typ, units, slope, val in METRICS:
            out.append(
                f'<METRIC NAME="{name}" VAL="{val(h, k)}" TYPE="{typ}" UNITS="{units}" TN="0" '
                f'TMAX="60" DMAX="0" SLOPE="{slope}" SOURCE="gmond">\n'
                f'<EXTRA_DATA>\n<EXTRA_ELEMENT NAME="GROUP" VAL="{GROUPS[name]}"/>\n'
                f'<EXTRA_ELEMENT NAME="TITLE" VAL="{name}"/>\n</EXTRA_DATA>\n</METRIC>\n'
            )
        out.append("</HOST>\n")
    out.append("</CLUSTER>\n</GANGLIA_XML>\n")
    return "".join(out).encode()


class Gmond(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(xml())


class Server(socketserver.TCPServer):
    allow_reuse_address = True


if __name__ == "__main__":
    with Server(("127.0.0.1", PORT), Gmond) as s:
        s.serve_forever()
