// Reads one input per line on stdin and prints 1 or 0 for its validity, for
// Scripts/differential-documents. Compiled with the module's sources, so it calls
// the same code the library ships. Usage: driver cpf|cnpj
#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@main
enum DifferentialDriver {
  static func main() {
    let arguments = CommandLine.arguments
    guard arguments.count == 2, arguments[1] == "cpf" || arguments[1] == "cnpj" else {
      fputs("usage: differential-documents-driver cpf|cnpj < inputs\n", stderr)
      exit(2)
    }
    let isCPF = arguments[1] == "cpf"
    var output: [UInt8] = []
    output.reserveCapacity(1 << 16)
    // Lines are split on "\n" only, so inputs may hold spaces, tabs and "\r".
    while let line = readLine(strippingNewline: true) {
      let valid = isCPF ? CPF.isValid(utf8: line.utf8) : CNPJ.isValid(utf8: line.utf8)
      output.append(valid ? UInt8(ascii: "1") : UInt8(ascii: "0"))
      output.append(UInt8(ascii: "\n"))
      if output.count >= 1 << 16 {
        output.withUnsafeBufferPointer { _ = fwrite($0.baseAddress, 1, $0.count, stdout) }
        output.removeAll(keepingCapacity: true)
      }
    }
    output.withUnsafeBufferPointer { _ = fwrite($0.baseAddress, 1, $0.count, stdout) }
    fflush(stdout)
  }
}
