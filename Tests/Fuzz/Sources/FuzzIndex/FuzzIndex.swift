import Foundation
import FuzzDriver
import Glibc
import PayloadSource
import TimelineIndex

/// A clip's index.bin and its bundle read back, damaged any way. Properties held for every input:
/// - `TimelineSnapshot(decoding:)` never traps: it decodes or throws naming why; what decodes re-encodes to bytes that
///   decode to the same snapshot again;
/// - a bundle directory holding the input as index.bin (and, read as JSON, as bundle.json) opens or is refused with a
///   reason; a window of one that opens never traps.
@_cdecl("FuzzIndex_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzIndex(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzInput(data, size)
    if let snapshot = try? TimelineSnapshot(decoding: bytes) {
        let again = snapshot.encoded()
        guard let back = try? TimelineSnapshot(decoding: again) else {
            fatalError("a decoded snapshot's own encoding does not decode")
        }
        precondition(back.encoded() == again, "index.bin does not round-trip")
    }
    // The same bytes as a bundle: split at the first NUL into bundle.json and index.bin.
    let dir = scratchFolder(bytes, name: "index", first: "bundle.json", second: "index.bin")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    FileManager.default.createFile(atPath: "\(dir)/f.ts", contents: Data(repeating: 7, count: 188))
    if let bundle = try? BundlePayloadSource(path: dir) {
        let window = bundle.window()
        _ = try? bundle.freeze(startNs: window.startNs, endNs: window.endNs)
    }
    return 0
}
