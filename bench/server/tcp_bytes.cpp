// The kernel's tcp_info (linux/tcp.h): glibc's netinet/tcp.h, which Asio includes, has no
// tcpi_bytes_received, and the two headers do not mix in one translation unit.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

long long wireBytes(int fd) {
    tcp_info info{};
    socklen_t len = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return -1;
    return static_cast<long long>(info.tcpi_bytes_received);
}
