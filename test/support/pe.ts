// A minimal PE image for install-cni tests: the MS-DOS header ("MZ", e_lfanew at 0x3C = 0x40), the PE
// signature and a COFF file header for AMD64 (https://learn.microsoft.com/en-us/windows/win32/debug/pe-format),
// then `body` (a text naming the plugin and release, so tests can tell the files apart). Enough for
// archive.ts's isPeImage, which a real linker's output passes too (test/unit/cni-plugins/bounds.test.ts builds one
// with mingw-w64).
export function peImage(body: string): Buffer {
  const head = Buffer.alloc(0x40 + 4 + 20);
  head.write('MZ', 0, 'latin1');
  head.writeUInt32LE(0x40, 0x3c);
  head.write('PE\0\0', 0x40, 'latin1');
  head.writeUInt16LE(0x8664, 0x44); // Machine: IMAGE_FILE_MACHINE_AMD64
  return Buffer.concat([head, Buffer.from(body, 'latin1')]);
}
