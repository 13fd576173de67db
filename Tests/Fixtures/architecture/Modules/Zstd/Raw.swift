// Fixture for check-architecture rule 5: system calls outside Syscall. Not compiled.
import Glibc

func drain(_ fd: Int32, _ p: UnsafeMutableRawPointer) {
    let n = recv(fd, p, 4, 0)
    _ = n
    Glibc.close(fd)
}

func ownNamesPass(_ ring: AnyObject, send: (Int) -> Void) {
    send(1)  // a closure parameter named like a system call is Swift's own
}
