// The UTF-8 byte order mark that Windows tools put before text they write: PowerShell 5's
// `Out-File -Encoding utf8` / `Set-Content -Encoding utf8` and Notepad before Windows 10 1903 both do
// (https://learn.microsoft.com/powershell/module/microsoft.powershell.core/about/about_character_encoding).
// Node's 'utf8' decoding keeps it as U+FEFF, which JSON.parse and dotenv then see as part of the text.

/** `text` without one leading U+FEFF. */
export function withoutBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}
