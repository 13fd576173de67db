import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A system call failed for a reason of the environment (a missing file, a full disk, a busy device).
/// Carries errno, the operation and the path, so a message can say what was being done to what.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let errno: Int32
    public let operation: String
    public let path: String?

    public init(errno: Int32, operation: String, path: String? = nil) {
        self.errno = errno
        self.operation = operation
        self.path = path
    }

    public var description: String {
        let reason = String(cString: strerror(errno))
        if let path { return "\(operation) \(path): \(reason) (errno \(errno))" }
        return "\(operation): \(reason) (errno \(errno))"
    }
}

/// Runs a system call, retrying on EINTR. A result of -1 becomes a ``SystemError``; EBADF and EFAULT are programmer
/// errors and trap.
@inlinable
@discardableResult
public func syscall<T: FixedWidthInteger>(
    _ operation: @autoclosure () -> String, path: @autoclosure () -> String? = nil, _ body: () -> T
) throws(SystemError) -> T {
    while true {
        let r = body()
        if r != -1 { return r }
        let e = errno
        if e == EINTR { continue }
        precondition(e != EBADF && e != EFAULT, "\(operation()): programmer error, errno \(e)")
        throw SystemError(errno: e, operation: operation(), path: path())
    }
}
