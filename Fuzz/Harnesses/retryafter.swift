// Fuzz target: the Retry-After parser never crashes and never asks for a negative wait.
import Foundation

@testable import CepisHTTP

/// libFuzzer's entry point: one input per call; a trap is a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  if let seconds = RetryAfter.seconds(from: text, now: Date(timeIntervalSince1970: 1_795_000_000)) {
    precondition(seconds >= 0 && seconds.isFinite)
  }
  return 0
}
