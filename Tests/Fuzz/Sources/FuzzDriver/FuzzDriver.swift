import Foundation
import Glibc

/// libFuzzer's driver, entered from a harness's own `main`: SwiftPM links an executable's entry point under the name
/// `<Target>_main`, so each harness defines that (one line: `runFuzzer(argc, argv)`) and its one-input function
/// `LLVMFuzzerTestOneInput`, which the driver hands to libFuzzer.
@_silgen_name("LLVMFuzzerRunDriver")
func llvmFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The harness's one-input function, defined by each harness with `@_cdecl("LLVMFuzzerTestOneInput")`.
@_silgen_name("LLVMFuzzerTestOneInput")
func llvmFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32

/// Runs libFuzzer with the process's arguments on the harness's `LLVMFuzzerTestOneInput`.
public func runFuzzer(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return llvmFuzzerRunDriver(&count, &arguments) { llvmFuzzerTestOneInput($0, $1) }
}

/// One input's bytes.
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// This process's scratch path for a harness (`ppc-fuzz-<name>-<pid>` in the temporary directory, or /dev/shm where
/// scripts/fuzz points TMPDIR): a file or folder each input is written to and removed after.
public func scratchPath(_ name: String) -> String { NSTemporaryDirectory() + "ppc-fuzz-\(name)-\(getpid())" }

/// `bytes` written as the scratch file `name` (with `ext`, which some readers go by), for a front door that reads a
/// file a user hands in; the caller removes it (`unlink`) after the input.
public func scratchFile(_ bytes: some Sequence<UInt8>, name: String, ext: String) -> String {
    let path = scratchPath(name) + "." + ext
    FileManager.default.createFile(atPath: path, contents: Data(bytes))
    return path
}

/// A fresh scratch folder `name` holding the input split at its first NUL, as the two files `first` and `second`
/// (for a reader of two files at once: a bundle's bundle.json and index.bin, a clip's meta.json and annotations.json).
public func scratchFolder(_ bytes: [UInt8], name: String, first: String, second: String) -> String {
    let dir = scratchPath(name)
    try? FileManager.default.removeItem(atPath: dir)
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    let cut = bytes.firstIndex(of: 0) ?? bytes.count
    FileManager.default.createFile(atPath: "\(dir)/\(first)", contents: Data(bytes[0..<cut]))
    FileManager.default.createFile(atPath: "\(dir)/\(second)", contents: Data(bytes[min(bytes.count, cut + 1)...]))
    return dir
}
