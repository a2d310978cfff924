// Printed once before the tests and at every process start: the Node.js that actually runs.
console.log(`node ${process.version} (${process.execPath})`);
