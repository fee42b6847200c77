#!/usr/bin/python3
"""A munin node for the tests: speaks munin-node's protocol (cap, nodes, list, config,
fetch, quit) on a loopback port, with values at fixed past times so that every master
fed by it gets the same updates.

    munin-node.py PORT STATE_DIR

STATE_DIR/phase (an integer) says how many 5-minute steps are served, counted from
STATE_DIR/anchor (a time); STATE_DIR/max is the `load` field's max in its config.
Each fetch returns every step served so far (`field.value TIME:VALUE` lines); the
master keeps what is new.
"""
import socketserver
import sys

PORT = int(sys.argv[1])
STATE = sys.argv[2]
HOST = "node1.example"
STEP = 300


def read(name, default):
    try:
        with open(f"{STATE}/{name}") as f:
            return f.read().strip()
    except OSError:
        return default


def load_value(i):
    # A gauge with a few unknowns (munin sends U) and an occasional spike to 75.
    if i % 37 == 5:
        return "U"
    if i % 29 == 7:
        return "75"
    return f"{(i * 7919) % 4000 / 100:.2f}"


def octets(i):
    # Counters that only grow (DERIVE, min 0), one wrap to a smaller value at step 100.
    down = 10_000_000 + i * 123_457 + (i * i) % 9973
    up = 5_000_000 + i * 54_321
    if i >= 100:
        down -= 20_000_000
    return down, up


class Node(socketserver.StreamRequestHandler):
    def out(self, s):
        self.wfile.write(s.encode())

    def handle(self):
        self.out(f"# munin node at {HOST}\n")
        for raw in self.rfile:
            line = raw.decode().strip()
            cmd, _, arg = line.partition(" ")
            if cmd == "cap":
                self.out("cap \n")
            elif cmd == "nodes":
                self.out(f"{HOST}\n.\n")
            elif cmd == "list":
                self.out("load if_eth0\n")
            elif cmd == "config" and arg == "load":
                mx = read("max", "100")
                self.out(
                    "graph_title Load average\ngraph_vlabel load\ngraph_category system\n"
                    f"graph_args --base 1000 -l 0\nload.label load\nload.max {mx}\n.\n"
                )
            elif cmd == "config" and arg == "if_eth0":
                self.out(
                    "graph_title eth0 traffic\ngraph_order down up\ngraph_args --base 1000\n"
                    "graph_vlabel bits in (-) / out (+) per ${graph_period}\n"
                    "graph_category network\n"
                    "down.label received\ndown.type DERIVE\ndown.graph no\n"
                    "down.cdef down,8,*\ndown.min 0\n"
                    "up.label bps\nup.type DERIVE\nup.negative down\n"
                    "up.cdef up,8,*\nup.min 0\n.\n"
                )
            elif cmd == "fetch" and arg in ("load", "if_eth0"):
                anchor = int(read("anchor", "0"))
                for i in range(int(read("phase", "0"))):
                    t = anchor + i * STEP
                    if arg == "load":
                        self.out(f"load.value {t}:{load_value(i)}\n")
                    else:
                        d, u = octets(i)
                        self.out(f"down.value {t}:{d}\nup.value {t}:{u}\n")
                self.out(".\n")
            elif cmd == "quit":
                return
            else:
                self.out("# Unknown command. Try cap, list, nodes, config, fetch, version or quit\n")
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    with Server(("127.0.0.1", PORT), Node) as s:
        s.serve_forever()
