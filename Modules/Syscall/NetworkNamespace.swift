#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation

/// Network namespaces, for benches and tests that put a device and a host on two sides of a real (virtual) link.
public enum NetworkNamespace {
    /// Moves the calling thread into the network namespace at `path` (`/run/netns/NAME`, as `ip netns add` makes it).
    /// Threads the caller starts afterwards inherit it; sockets keep the namespace they were made in. Needs CAP_SYS_ADMIN.
    public static func enter(_ path: String) throws(SystemError) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError(errno: errno, operation: "open", path: path) }
        defer { close(fd) }
        guard ppc_setns(fd, 0x4000_0000 /* CLONE_NEWNET */) == 0 else { throw SystemError(errno: errno, operation: "setns", path: path) }
    }
}
