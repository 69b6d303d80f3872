// browser-agent's launcher for the Playwright driver (bridge/driver.go writes it, with CLI set to
// the driver's package/cli.js). playwright-go runs "<node> <cli> --version" before every driver
// start, and cli.js loads the whole of Playwright (about 0.6 s, a second or more on a busy
// machine) to print one line. The bridge has already checked the package's version
// (checkDriverDir), so this answers that one question from the same package.json and hands
// every other command to cli.js, with process.argv as if cli.js had been run itself.
const CLI = /*CLI*/'';
const path = require('path');
if (process.argv.length === 3 && process.argv[2] === '--version') {
  process.stdout.write('Version ' + require(path.join(path.dirname(CLI), 'package.json')).version + '\n');
} else {
  process.argv[1] = CLI;
  require(CLI);
}
