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

func descriptors(_ fd: Int32, _ p: UnsafeMutableRawPointer) {
    _ = fcntl(fd, F_GETFL)
    var fds: [Int32] = [0, 0]
    _ = pipe(&fds)
    _ = lseek(fd, 0, SEEK_SET)
    var st = stat()
    _ = fstat(fd, &st)
}

struct Reader {
    func read(_ n: Int) -> Int { n }
    func twice() -> Int { read(1) + read(2) }  // this type's own method: Swift's, passes
}

extension Reader {
    func again() -> Int { read(3) }  // still the type's own method, in an extension: passes
}

func outsideTheType(_ fd: Int32, _ p: UnsafeMutableRawPointer) -> Int {
    read(fd, p, 4)  // the method above does not make this one Swift's: flagged
}
