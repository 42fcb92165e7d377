// Installs the pinned reference (loopx from PyPI) into .cache/reference-venv before the reference tier runs.
export { setup } from "./reference.js";
