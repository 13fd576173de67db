import Foundation
import Syscall
import Testing

/// The one system-call path: every failure names the operation, the path and the reason; small files are bounded;
/// plain names are refused with the reason, never rewritten.
@Suite("Syscall: errors that name what failed, bounded reads, plain names")
struct SyscallTests {
    let dir = NSTemporaryDirectory() + "ppc-syscall-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"

    @Test func aFailedCallNamesTheOperationThePathAndTheReason() throws {
        let missing = dir + "/absent"
        #expect {
            try FileSystem.unlink(missing)
        } throws: {
            let e = $0 as? SystemError
            return e?.errno == ENOENT && e?.operation == "unlink" && e?.path == missing
                && "\($0)" == "unlink \(missing): No such file or directory (errno \(ENOENT))"
        }
        #expect(SystemError(errno: EPERM, operation: "setns").description == "setns: Operation not permitted (errno 1)")
    }

    @Test func aSmallFileIsReadWholeAndALargerOneIsRefusedNamingIt() throws {
        try FileSystem.makeDirectories(dir + "/a/b")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/a/b/state.json"
        try FileSystem.writeAtomically(Array("{\"n\": 1}".utf8), to: path)
        #expect(try FileSystem.readSmallFile(path, limit: 64) == Array("{\"n\": 1}".utf8))
        #expect(try FileSystem.list(dir + "/a/b") == ["state.json"])
        #expect {
            try FileSystem.readSmallFile(path, limit: 4)
        } throws: { ($0 as? SystemError)?.errno == EFBIG && "\($0)".contains(path) }
        #expect {
            try FileSystem.readSmallFile(dir + "/a", limit: 64)
        } throws: { ($0 as? SystemError)?.errno == EISDIR }
        // A file of a clip or a library is never a FIFO waited on for ever.
        #expect(mkfifo(dir + "/a/fifo", 0o600) == 0)
        #expect(throws: SystemError.self) {
            try FileSystem.readSmallFile(dir + "/a/fifo", limit: 64, regularFileOnly: true)
        }
    }

    @Test func anAtomicWriteReplacesWholeOrNotAtAll() throws {
        try FileSystem.makeDirectories(dir)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/bays.json"
        try FileSystem.writeAtomically(Array(repeating: 0x61, count: 10_000), to: path)
        try FileSystem.writeAtomically(Array("b".utf8), to: path)
        #expect(try FileSystem.readSmallFile(path, limit: 20_000) == Array("b".utf8))
        #expect(try FileSystem.list(dir) == ["bays.json"], "no temporary file left beside it")
    }

    @Test(
        arguments: [
            ("bay-1", nil), ("Face.On_2", nil), ("", "id is empty"), ("-x", "must start with a letter or digit"),
            ("bay/c", "has '/' at byte 3"), ("é", "has"), (String(repeating: "a", count: 65), "at most 64"),
        ] as [(String, String?)])
    func aPlainNameIsTakenAsItIsOrRefusedWithTheReason(_ name: String, _ why: String?) {
        let problem = PlainName.problem(name, what: "id")
        if let why { #expect(problem?.contains(why) == true, "\(problem ?? "taken")") } else { #expect(problem == nil) }
        #expect(PlainName.isPlain(name) == (why == nil))
    }

    @Test func anAddressThatIsNoneIsRefusedNamingTheHost() {
        #expect(throws: (any Error).self) { try Socket.lookupIPv4("no such host.invalid", 80) }
        #expect(throws: (any Error).self) { try Socket.lookupIPv4("127.0.0.1", 70_000) }
        #expect((try? Socket.lookupIPv4("127.0.0.1", 8080)) != nil)
    }
}
