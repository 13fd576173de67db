// Fixture: inside Modules/Syscall raw calls are the point. Not compiled.
import Glibc

func allowed(_ fd: Int32) { _ = Glibc.close(fd) }
