// The git commit the agent was built from. `npm run build` overwrites dist/basics/build-commit.js with the
// commit (packaging/stamp-commit.mjs: $FLANNELD_COMMIT, else `git rev-parse`); from the sources it is
// empty, and the User-Agent says `unknown`, as client-go's does for a build without one.
export const BUILD_COMMIT: string = '';
