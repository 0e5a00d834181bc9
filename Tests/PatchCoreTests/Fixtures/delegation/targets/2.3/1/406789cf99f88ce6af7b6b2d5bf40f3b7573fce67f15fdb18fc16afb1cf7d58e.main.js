defineClass('Delegated', {});
