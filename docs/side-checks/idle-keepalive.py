# How much resident memory idle keep-alive HTTP connections cost a `herald serve` process: opens N
# connections, sends `GET /healthz` on each and reads the answer's head, then holds them all open and
# reads the server's VmRSS. The floor under any long poll served by a connection task.
#
#   python3 docs/side-checks/idle-keepalive.py <connections> <herald pid> [port]
import socket
import sys
import time

count, pid = int(sys.argv[1]), sys.argv[2]
port = int(sys.argv[3]) if len(sys.argv) > 3 else 18090


def rss_kb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])


before = rss_kb()
held = []
for _ in range(count):
    connection = socket.create_connection(("127.0.0.1", port))
    connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: herald\r\n\r\n")
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += connection.recv(4096)
    held.append(connection)
time.sleep(2)
after = rss_kb()
print(f"{count} idle keep-alive connections: VmRSS {before // 1024} MB -> {after // 1024} MB, {(after - before) / count:.1f} KB each")
