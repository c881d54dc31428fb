import CepisCommandLine

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

exit(await CepisTool.main(Array(CommandLine.arguments.dropFirst())))
