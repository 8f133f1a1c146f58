"""One node's end of a probe of the testbed's link (testbed.sh): `serve ADDRESS` on one
node answers; `probe ADDRESS MEGABYTES` on another prints the median round trip of a
byte, in ms, and the rate of a one-way transfer of MEGABYTES, in Mbit/s."""
import socket
import statistics
import sys
import time

PORT = 5999


def serve(address, _megabytes=None):
    listener = socket.create_server((address, PORT))
    peer, _ = listener.accept()
    peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while (byte := peer.recv(1)) != b"!":
        peer.sendall(byte)
    peer.sendall(b"!")
    while peer.recv(1 << 20):
        pass


def connect(address):
    for _ in range(100):
        try:
            return socket.create_connection((address, PORT))
        except OSError:
            time.sleep(0.05)
    sys.exit(f"link_probe: no answer from {address}:{PORT}")


def probe(address, megabytes):
    peer = connect(address)
    peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    trips = []
    for _ in range(20):
        start = time.perf_counter()
        peer.sendall(b"x")
        peer.recv(1)
        trips.append(time.perf_counter() - start)
    peer.sendall(b"!")
    peer.recv(1)
    block = bytes(1 << 20)
    start = time.perf_counter()
    for _ in range(int(megabytes)):
        peer.sendall(block)
    peer.shutdown(socket.SHUT_WR)
    peer.recv(1)
    seconds = time.perf_counter() - start
    print(f"{statistics.median(trips) * 1e3:.2f} {int(megabytes) * 8 * 2**20 / seconds / 1e6:.0f}")


{"serve": serve, "probe": probe}[sys.argv[1]](*sys.argv[2:])
