/// libFuzzer's driver, entered from a harness's own `main`: SwiftPM links an executable's entry point under the name
/// `<Target>_main`, so each harness defines that (one line: `runFuzzer(argc, argv)`) and its one-input function
/// `LLVMFuzzerTestOneInput`, which the driver hands to libFuzzer.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The harness's one-input function, defined by each harness with `@_cdecl("LLVMFuzzerTestOneInput")`.
@_silgen_name("LLVMFuzzerTestOneInput")
func LLVMFuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32

/// Runs libFuzzer with the process's arguments on the harness's `LLVMFuzzerTestOneInput`.
public func runFuzzer(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments) { LLVMFuzzerTestOneInput($0, $1) }
}

/// One input's bytes.
public func fuzzInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}
