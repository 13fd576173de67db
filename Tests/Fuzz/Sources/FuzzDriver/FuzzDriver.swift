/// libFuzzer's driver, entered from a harness's own `main`: SwiftPM links an executable's entry point under the name
/// `<Target>_main`, so each harness defines that and hands its one-input function here.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// Runs libFuzzer with the process's arguments and `harness` as its test of one input.
public func runFuzzer(
    _ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
    _ harness: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32 {
    var count = argc
    var arguments = argv
    return LLVMFuzzerRunDriver(&count, &arguments, harness)
}
