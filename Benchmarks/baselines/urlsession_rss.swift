// A minimal reproduction, without any Cepis code: the same 500-CEP `/csv` request sent again
// and again through `URLSession.shared` with a completion handler, printing the resident set
// size every `rounds / 5` requests. On Linux (swift-corelibs-foundation's FoundationNetworking)
// RSS grows by a few KiB per request however the session is used, which is what makes a long
// `cepis enrich` grow by a few MiB per thousand requests.
//
//   swiftc -O urlsession_rss.swift -o urlsession_rss && ./urlsession_rss http://127.0.0.1:PORT 5000
import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

func residentMiB() -> Double {
  guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
    let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Double($0) })
  else { return 0 }
  return pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576
}

let arguments = CommandLine.arguments
guard arguments.count >= 2, let rounds = Int(arguments.count > 2 ? arguments[2] : "2000"),
  let url = URL(
    string: arguments[1] + "/csv?ceps="
      + (0..<500).map { String(10_000_000 + $0 * 17) }.joined(separator: ","))
else {
  print("usage: urlsession_rss BASE_URL [ROUNDS]")
  exit(2)
}
for round in 1...rounds {
  let done = DispatchSemaphore(value: 0)
  URLSession.shared.dataTask(with: url) { _, _, _ in done.signal() }.resume()
  done.wait()
  if round % max(1, rounds / 5) == 0 {
    print("rss_mib_after_\(round)=\(String(format: "%.1f", residentMiB()))")
  }
}
