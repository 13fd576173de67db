import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension Descriptor {
    /// setns(2) into the network namespace whose file is `path`: the calling thread moves, threads it starts after
    /// inherit it, sockets keep the namespace they were made in. Needs CAP_SYS_ADMIN. (What a namespace is for — the
    /// shaped link of `bench link` — is the benchmark's business.)
    public static func enterNetworkNamespace(_ path: String) throws(SystemError) {
        let fd = try open(path, O_RDONLY)
        defer { close(fd) }
        let cloneNewNet: Int32 = 0x4000_0000  // CLONE_NEWNET (sched.h)
        guard ppc_setns(fd, cloneNewNet) == 0 else { throw SystemError(errno: errno, operation: "setns", path: path) }
    }
}
